/* Rungwise rating form (ratings/kinds/rate.html#form).
 *
 * A number key (or a click) chooses a rating; Enter (or Submit) sends it. The item screen's
 * script (static/js/annotate.js) clicks the element whose data-key matches the pressed key; here
 * clicks on rating buttons choose instead of submitting, Submit is held back until a rating is
 * chosen. A practice item's feedback is the item screen's, after the answer (annotation/practice.py).
 * Listeners sit on the document, so htmx swapping in the next item needs no re-binding; this
 * file is included with every item and runs once.
 */
(function () {
  "use strict";
  if (window.rungwiseRate) return;
  window.rungwiseRate = true;

  function rateOf(element) {
    return element && element.closest ? element.closest("[data-rate]") : null;
  }

  function field(rate, name) {
    return rate.querySelector("[data-rate-" + name + "]");
  }

  function hint(rate, text) {
    var box = field(rate, "hint");
    if (box) box.textContent = text || "";
  }

  function cannotJudge(rate) {
    var box = field(rate, "cannot");
    return !!(box && box.checked);
  }

  function choose(rate, value) {
    field(rate, "value").value = value;
    rate.querySelectorAll("[data-rate-point]").forEach(function (button) {
      button.setAttribute("aria-pressed", button.getAttribute("data-rate-point") === value ? "true" : "false");
    });
    if (cannotJudge(rate)) {
      field(rate, "cannot").checked = false;
      syncReason(rate);
    }
    hint(rate, "Rating " + value + " chosen: press Enter to submit.");
  }

  function syncReason(rate) {
    var reason = field(rate, "reason");
    if (!reason) return;
    var on = cannotJudge(rate);
    reason.hidden = !on;
    if (on) {
      rate.querySelectorAll("[data-rate-point]").forEach(function (button) {
        button.setAttribute("aria-pressed", "false");
      });
      field(rate, "value").value = "";
      var input = field(rate, "reason-input");
      if (input) input.focus();
      hint(rate, "Say why, then press Enter.");
    } else {
      hint(rate, "");
    }
  }

  // Returns true when the submission may go ahead.
  function readyToSubmit(rate) {
    var value = field(rate, "value").value;
    if (cannotJudge(rate)) {
      var input = field(rate, "reason-input");
      if (input && !input.value.trim()) {
        hint(rate, "Say briefly why you can't judge this sentence.");
        input.focus();
        return false;
      }
      return true;
    }
    if (!value) {
      var high = rate.getAttribute("data-high");
      hint(rate, "Choose a rating first: number keys " + rate.getAttribute("data-low") + "–" +
        (high === "10" ? "9, 0 for 10" : high) + ", or click one.");
      return false;
    }
    return true;
  }

  document.addEventListener(
    "click",
    function (event) {
      var button = event.target.closest && event.target.closest("[data-rate-point], [data-rate-submit]");
      var rate = rateOf(button);
      if (!rate) return;
      if (button.hasAttribute("data-rate-point")) {
        // With the script on, a rating button chooses; Enter / Submit sends.
        event.preventDefault();
        choose(rate, button.getAttribute("data-rate-point"));
        return;
      }
      if (!readyToSubmit(rate)) {
        event.preventDefault();
        event.stopPropagation();
      }
    },
    true
  );

  document.addEventListener("change", function (event) {
    if (event.target.hasAttribute && event.target.hasAttribute("data-rate-cannot")) {
      syncReason(rateOf(event.target));
    }
  });

  // Enter in the reason field would submit through the form's first button (rating 1); send
  // it through Submit instead, like everywhere else.
  document.addEventListener(
    "keydown",
    function (event) {
      if (event.key !== "Enter" || !event.target.hasAttribute || !event.target.hasAttribute("data-rate-reason-input")) return;
      var rate = rateOf(event.target);
      var submit = rate && field(rate, "submit");
      if (!submit) return;
      event.preventDefault();
      submit.click();
    },
    true
  );

  function init(root) {
    (root || document).querySelectorAll("[data-rate]").forEach(function (rate) {
      var reason = field(rate, "reason");
      if (reason) reason.hidden = !cannotJudge(rate);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { init(document); });
  } else {
    init(document);
  }
  document.addEventListener("htmx:load", function (event) { init(event.target); });
})();
