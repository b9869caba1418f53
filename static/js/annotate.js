/* Rungwise item screen: keyboard shortcuts, time spent, focus after htmx swaps.
 *
 * Shortcuts are declared in the markup: any element with data-key="k" is clicked when k is
 * pressed (choice buttons submit their form; a <summary data-focus-inside> opens its <details>
 * and focuses the first control inside). Keys are ignored while typing in a text field or with a
 * modifier held. "?" toggles the help, Esc closes it or leaves a text field. The page works
 * without this script: every control is a plain form.
 *
 * No key press is lost: while a submission is in flight (until the next item has arrived and
 * takes keys) the screen shows that it is busy, and shortcut keys pressed meanwhile wait in a
 * queue; they are replayed in order on the next item, each submit waiting for its answer again.
 * What cannot be replayed (the queue meets an error, a text field, or a screen without that
 * shortcut, such as "All done") is dropped *visibly*: the status line says how many keys were
 * not used and why.
 */
(function () {
  "use strict";

  var startedAt = performance.now();
  var busy = false;
  // Shortcut keys pressed while busy, in order; replayed when the next item takes keys.
  var waiting = [];
  var MAX_WAITING = 100;

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
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && !event.altKey) {
      // Ctrl+Enter (⌘+Enter) sends the form being edited, also from inside a text field.
      var send = ctrlEnterButton(event.target);
      if (send && !busy) {
        event.preventDefault();
        activate(send);
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
    if (overlay && !overlay.hidden) return;
    var key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    if (busy) {
      // The item is being saved: keep the key for the next item (never drop it silently).
      if (key.length === 1 || key === "Enter" || key === "Backspace") {
        event.preventDefault();
        if (waiting.length < MAX_WAITING) {
          waiting.push(key);
          showQueue();
        } else {
          refuse(1, "too many keys are waiting");
        }
      }
      return;
    }
    if (pressKey(key, event.target)) event.preventDefault();
  });

  // The submit button Ctrl+Enter presses: the item form's button marked data-ctrl-enter that is
  // showing (inside an open <details>, the one beside the focus first), else its one submit
  // button without a name (a button with a name is an answer, such as "Pass").
  function ctrlEnterButton(from) {
    var form = from && from.closest ? from.closest("#annotate form") : null;
    form = form || document.querySelector("#item-card form.item-form");
    if (!form) return null;
    var box = from && from.closest ? from.closest("details") : null;
    var marked = Array.prototype.filter.call(
      form.querySelectorAll("[data-ctrl-enter]"),
      function (button) {
        var inside = button.closest("details");
        return !button.disabled && (!inside || inside.open);
      }
    );
    for (var i = 0; i < marked.length; i++) {
      if (box && box.contains(marked[i])) return marked[i];
    }
    if (marked.length) return marked[0];
    var plain = form.querySelectorAll('button[type="submit"]:not([name])');
    return plain.length === 1 && !plain[0].disabled ? plain[0] : null;
  }

  // Letter keys a, b, c… choose an option of a question (a fieldset marked data-letter-keys):
  // the question holding the focus, else the first one unanswered; the focus then moves on to
  // the next question, so "b c a Enter" answers three questions and submits.
  function pressLetter(key, from) {
    if (!/^[a-z]$/.test(key)) return false;
    var scope = document.getElementById("annotate");
    if (!scope) return false;
    var questions = Array.prototype.slice.call(scope.querySelectorAll("[data-letter-keys]"));
    if (!questions.length) return false;
    var current = from && from.closest ? from.closest("[data-letter-keys]") : null;
    if (!current || questions.indexOf(current) === -1) {
      current = questions.filter(function (question) {
        return !question.querySelector("input:checked");
      })[0];
    }
    if (!current) return false;
    var options = current.querySelectorAll('input[type="radio"]');
    var option = options[key.charCodeAt(0) - 97];
    if (!option || option.disabled) return false;
    option.checked = true;
    option.dispatchEvent(new Event("change", { bubbles: true }));
    var next = questions[questions.indexOf(current) + 1];
    if (next) {
      var focus = next.querySelector("input:checked") || next.querySelector('input[type="radio"]');
      if (focus) focus.focus();
    } else {
      option.focus();
    }
    return true;
  }

  // Press the shortcut `key` on the current screen; `from` is the element that has the focus.
  // Returns whether a shortcut took it.
  function pressKey(key, from) {
    if (pressLetter(key, from)) return true;
    var scope = document.getElementById("annotate") || document;
    var target = scope.querySelector('[data-key="' + CSS.escape(key) + '"]');
    if (!target || target.disabled) return false;
    if (key === "Enter" && from) {
      // Enter on a focused button, link or summary does what it says (a skip reason after
      // "s", say); and Enter in another form than the shortcut's belongs to that form.
      var tag = from.tagName ? from.tagName.toLowerCase() : "";
      if (tag === "button" || tag === "a" || tag === "summary") return false;
      var own = from.closest ? from.closest("form") : null;
      if (own && own !== target.closest("form")) return false;
    }
    activate(target);
    return true;
  }

  // --- Busy state and the queue of waiting keys --------------------------------------------
  function queueBox() {
    return document.getElementById("key-queue");
  }

  function setBusy(on) {
    busy = on;
    var region = document.getElementById("annotate");
    if (region) region.setAttribute("aria-busy", on ? "true" : "false");
    document.body.classList.toggle("is-saving", on);
    showQueue();
  }

  function showQueue() {
    var box = queueBox();
    if (!box) return;
    if (!busy && !waiting.length) {
      if (!box.hasAttribute("data-refused")) box.hidden = true;
      return;
    }
    box.removeAttribute("data-refused");
    box.classList.remove("warning");
    box.textContent = waiting.length
      ? "Saving… " + waiting.length + " key" + (waiting.length === 1 ? "" : "s") +
        " waiting for the next item"
      : "Saving…";
    box.setAttribute("data-keys-waiting", String(waiting.length));
    box.hidden = false;
  }

  function refuse(count, why) {
    var box = queueBox();
    if (!box || count < 1) return;
    box.classList.add("warning");
    box.setAttribute("data-refused", String(count));
    box.setAttribute("data-keys-waiting", "0");
    box.textContent = count + " key press" + (count === 1 ? " was" : "es were") +
      " not used: " + why + ".";
    box.hidden = false;
  }

  // Replay the waiting keys on the screen that just arrived, until one starts a request (the
  // rest wait for its answer) or one cannot be used (it and the rest are refused, visibly).
  function replay() {
    if (!waiting.length) return;
    var region = document.getElementById("annotate");
    if (region && region.querySelector("[role=alert]")) {
      refuse(waiting.splice(0).length, "the last answer was not saved (see the message)");
      return;
    }
    while (waiting.length && !busy) {
      if (isTyping(document.activeElement)) {
        refuse(waiting.splice(0).length, "a text field is open; type there, then press Enter");
        return;
      }
      var key = waiting[0];
      if (!pressKey(key, document.activeElement)) {
        refuse(waiting.splice(0).length, "no item is waiting for “" + key + "” here");
        return;
      }
      waiting.shift();
    }
    showQueue();
  }

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

  // Busy from the moment a request leaves until the screen it brings takes keys (htmx:load of
  // the new #annotate below), or until a request that brought no new screen ends.
  document.body.addEventListener("htmx:beforeRequest", function () {
    setBusy(true);
  });
  // The swapped-in region arrives as new elements: reset the clock and move focus to the item,
  // so that screen readers and the next key press start from the new item. (After an outerHTML
  // swap the requesting form is detached and its own events no longer reach <body>.)
  function settled() {
    setBusy(false);
    document.querySelectorAll(".is-pressed").forEach(function (element) {
      element.classList.remove("is-pressed");
    });
  }
  document.body.addEventListener("htmx:afterRequest", function (event) {
    var detail = event.detail || {};
    // A new #annotate is on its way: its htmx:load ends the busy state (and replays the keys).
    var swapsTheScreen = detail.target && detail.target.id === "annotate";
    if (detail.successful && swapsTheScreen && detail.xhr && detail.xhr.status !== 204) return;
    if (detail.successful) {
      settled();
      replay();
      return;
    }
    settled();
    refuse(waiting.splice(0).length, "the answer could not be sent; check the connection");
  });
  document.body.addEventListener("htmx:sendError", function () {
    settled();
    refuse(waiting.splice(0).length, "the answer could not be sent; check the connection");
  });
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

  // A form whose first act is typing (a number) marks its field data-autofocus: focus it on a
  // full page load as after an htmx swap (below), so digits go into it and Enter submits it.
  (function focusFirstField() {
    var field = document.querySelector("#item-card [data-autofocus]");
    if (field && !isTyping(document.activeElement)) field.focus({ preventScroll: true });
  })();

  // An answer the server refused comes back with its error inside the item's form, below the
  // item, which may be long (a METER entry): bring the error into view, where the eye is. The
  // focus stays on the item, so the shortcut keys still work.
  function showError() {
    var box = document.querySelector("#item-card .error-box");
    if (box) box.scrollIntoView({ block: "center" });
  }
  showError();

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
    showError();
    ready();
    replay();
  });
  ready();
})();
