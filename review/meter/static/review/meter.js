/* METER's structured editor: a field that differs from the generated text is marked, shows
 * "was: …" and a Reset button that puts the generated text (or category) back. The form works
 * without this script; it only adds the live marking and the reset. */
(function () {
  "use strict";
  function field(element) { return element.closest("[data-meter-field]"); }
  function refresh(box) {
    var changed = Array.prototype.some.call(
      box.querySelectorAll("[data-original]"),
      function (input) { return input.value !== input.getAttribute("data-original"); }
    );
    box.classList.toggle("changed", changed);
  }
  document.addEventListener("input", function (event) {
    var box = event.target.closest && field(event.target);
    if (box) refresh(box);
  });
  document.addEventListener("change", function (event) {
    var box = event.target.closest && field(event.target);
    if (box) refresh(box);
  });
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-meter-reset]");
    if (!button) return;
    var box = field(button);
    box.querySelectorAll("[data-original]").forEach(function (input) {
      input.value = input.getAttribute("data-original");
    });
    refresh(box);
    box.querySelector("textarea").focus();
  });
})();
