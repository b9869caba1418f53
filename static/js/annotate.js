/* Rungwise item screen: keyboard shortcuts, time spent, focus after htmx swaps.
 *
 * Shortcuts are declared in the markup: any element with data-key="k" is clicked when k is
 * pressed (choice buttons submit their form; a <summary data-focus-inside> opens its <details>
 * and focuses the first control inside). Keys are ignored while typing in a text field, with a
 * modifier held, or while a submission is in flight. "?" toggles the help, Esc closes it or
 * leaves a text field. The page works without this script: every control is a plain form.
 */
(function () {
  "use strict";

  var startedAt = performance.now();
  var busy = false;

  document.body.classList.remove("no-js");
  document.querySelectorAll("[data-needs-js]").forEach(function (element) {
    element.hidden = false;
  });

  function isTyping(target) {
    if (!target || !target.tagName) return false;
    var tag = target.tagName.toLowerCase();
    if (tag === "textarea" || tag === "select" || target.isContentEditable) return true;
    if (tag !== "input") return false;
    var type = (target.getAttribute("type") || "text").toLowerCase();
    return ["button", "submit", "checkbox", "radio", "reset", "range", "color"].indexOf(type) === -1;
  }

  function helpOverlay() {
    return document.getElementById("help-overlay");
  }

  function toggleHelp(show) {
    var overlay = helpOverlay();
    if (!overlay) return;
    var open = show === undefined ? overlay.hidden : show;
    overlay.hidden = !open;
    if (open) {
      overlay.querySelector("[data-action='close-help']").focus();
    } else {
      focusItem();
    }
  }

  function focusItem() {
    var card = document.getElementById("item-card");
    if (card) card.focus({ preventScroll: true });
  }

  function activate(element) {
    if (element.tagName.toLowerCase() === "summary") {
      var details = element.parentElement;
      details.open = !details.open;
      if (details.open && element.hasAttribute("data-focus-inside")) {
        var first = details.querySelector("button, input:not([type=hidden]), select, textarea");
        if (first) first.focus();
      } else {
        focusItem();
      }
      return;
    }
    if (element.getAttribute("data-action") === "help") {
      toggleHelp();
      return;
    }
    element.classList.add("is-pressed");
    element.click();
  }

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") {
      var overlay = helpOverlay();
      if (overlay && !overlay.hidden) {
        toggleHelp(false);
        event.preventDefault();
      } else if (isTyping(event.target)) {
        event.target.blur();
        focusItem();
        event.preventDefault();
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (isTyping(event.target)) return;
    // Keys typed while a navigation menu is open (or focused) belong to the menu, not the item.
    if (document.querySelector("details.menu[open]")) return;
    if (event.target.closest && event.target.closest(".site-nav")) return;
    if (event.key === "?") {
      toggleHelp();
      event.preventDefault();
      return;
    }
    var overlay = helpOverlay();
    if (busy || (overlay && !overlay.hidden)) return;
    var key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    var scope = document.getElementById("annotate") || document;
    var target = scope.querySelector('[data-key="' + CSS.escape(key) + '"]');
    if (!target || target.disabled) return;
    if (key === "Enter") {
      // Enter on a focused button, link or summary does what it says (a skip reason after
      // "s", say); and Enter in another form than the shortcut's belongs to that form.
      var tag = event.target.tagName ? event.target.tagName.toLowerCase() : "";
      if (tag === "button" || tag === "a" || tag === "summary") return;
      var own = event.target.closest ? event.target.closest("form") : null;
      if (own && own !== target.closest("form")) return;
    }
    event.preventDefault();
    activate(target);
  });

  document.addEventListener("click", function (event) {
    var action = event.target.closest("[data-action]");
    if (!action) return;
    if (action.getAttribute("data-action") === "help") toggleHelp();
    if (action.getAttribute("data-action") === "close-help") toggleHelp(false);
  });

  var overlay = helpOverlay();
  if (overlay) {
    overlay.addEventListener("click", function (event) {
      if (event.target === overlay) toggleHelp(false);
    });
  }

  // Time spent: measured here and sent with the form (the server falls back to the lease age).
  // Capture phase, so the field is filled before htmx collects the form's values.
  document.addEventListener(
    "submit",
    function (event) {
      var field = event.target.querySelector("[data-seconds-spent]");
      if (field) field.value = ((performance.now() - startedAt) / 1000).toFixed(2);
    },
    true
  );

  document.body.addEventListener("htmx:beforeRequest", function () {
    busy = true;
  });
  // The swapped-in region arrives as new elements: reset the clock and move focus to the item,
  // so that screen readers and the next key press start from the new item. (After an outerHTML
  // swap the requesting form is detached and its own events no longer reach <body>.)
  function settled() {
    busy = false;
    document.querySelectorAll(".is-pressed").forEach(function (element) {
      element.classList.remove("is-pressed");
    });
  }
  document.body.addEventListener("htmx:afterRequest", settled);
  document.body.addEventListener("htmx:sendError", settled);
  // htmx moves the focus to the new #item-card as soon as it swaps (it keeps the focused id),
  // but the new form is wired up only when the swap settles (htmx:load, ~20 ms later); keys
  // pressed in between are ignored. #annotate[data-ready] marks the moment keys work again.
  // Changing an answer: the choice button of the current answer is marked (the form carries
  // data-current, the answer as text); forms with fields are filled in by the server.
  function markCurrentAnswer() {
    var form = document.querySelector("#item-card form[data-current]");
    if (!form) return;
    var current = form.getAttribute("data-current");
    form.querySelectorAll("button[name][value]").forEach(function (button) {
      if (button.value === current) {
        button.classList.add("is-current");
        button.setAttribute("aria-current", "true");
      }
    });
  }
  markCurrentAnswer();

  function ready() {
    var region = document.getElementById("annotate");
    if (region) region.setAttribute("data-ready", "");
  }
  document.addEventListener("htmx:load", function (event) {
    if (!event.target || event.target.id !== "annotate") return;
    settled();
    startedAt = performance.now();
    focusItem();
    // A form whose first act is typing (a number) marks its field data-autofocus: focus it,
    // as the autofocus attribute does on a full page load.
    var field = document.querySelector("#item-card [data-autofocus]");
    if (field) field.focus({ preventScroll: true });
    ready();
  });
  ready();
})();
