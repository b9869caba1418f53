/* Rungwise causal narratives (narratives/templates/narratives/order.html#form).
 *
 * Chains: the event cards form an ordered list. Drag a card onto another to move it there; or
 * focus a card and press j / k (or ↓ / ↑) to move the focus, Shift+↓ / Shift+↑ (or Shift+J /
 * Shift+K, i.e. "J" / "K") to move the card itself. Each card carries a hidden "order" input,
 * so the form posts the cards in their current order. Graphs: every event is a button; the
 * first pressed is the cause, the second the effect, and the pair's checkbox (the form's state)
 * is toggled. Every change is announced in the aria-live status line. Enter submits through
 * the item screen's data-key="Enter" button (static/js/annotate.js).
 * Listeners sit on the document, so htmx swapping in the next item needs no re-binding; this
 * file runs once.
 */
(function () {
  "use strict";
  if (window.rungwiseNarratives) return;
  window.rungwiseNarratives = true;

  function status(root, text) {
    var form = root.closest("form") || document;
    var line = form.querySelector("[data-narrative-status]");
    if (line) line.textContent = text;
  }

  // --- Chains ---------------------------------------------------------------------------------

  function cardsOf(list) {
    return Array.prototype.slice.call(list.querySelectorAll("[data-card]"));
  }

  function renumber(list) {
    var cards = cardsOf(list);
    cards.forEach(function (card, index) {
      card.querySelector("[data-position]").textContent = String(index + 1);
      card.setAttribute("aria-label", "Position " + (index + 1) + " of " + cards.length + ": " + card.getAttribute("data-label"));
    });
  }

  function focusCard(list, card) {
    cardsOf(list).forEach(function (other) { other.tabIndex = other === card ? 0 : -1; });
    card.focus();
  }

  function move(card, step) {
    var list = card.parentElement;
    var cards = cardsOf(list);
    var index = cards.indexOf(card);
    var target = index + step;
    if (target < 0 || target >= cards.length) {
      status(list, card.getAttribute("data-label") + " is already " + (step < 0 ? "first." : "last."));
      return;
    }
    if (step < 0) list.insertBefore(card, cards[target]);
    else list.insertBefore(card, cards[target].nextSibling);
    renumber(list);
    focusCard(list, card);
    status(list, "Moved " + card.getAttribute("data-label") + " to position " + (target + 1) + " of " + cards.length + ".");
  }

  function initOrder(list) {
    if (list.hasAttribute("data-wired")) return;
    list.setAttribute("data-wired", "");
    showScripted(list);
    list.querySelectorAll("[data-order-value]").forEach(function (input) { input.disabled = false; });
    list.querySelectorAll("[data-rank]").forEach(function (select) { select.disabled = true; });
    renumber(list);
  }

  var dragged = null;

  document.addEventListener("dragstart", function (event) {
    var card = event.target.closest && event.target.closest("[data-card]");
    if (!card) return;
    dragged = card;
    card.classList.add("is-dragging");
    event.dataTransfer.effectAllowed = "move";
    event.dataTransfer.setData("text/plain", card.getAttribute("data-node"));
  });

  document.addEventListener("dragover", function (event) {
    var card = event.target.closest && event.target.closest("[data-card]");
    if (!dragged || !card || card.parentElement !== dragged.parentElement) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = "move";
  });

  document.addEventListener("drop", function (event) {
    var card = event.target.closest && event.target.closest("[data-card]");
    if (!dragged || !card || card.parentElement !== dragged.parentElement) return;
    event.preventDefault();
    var list = card.parentElement;
    var cards = cardsOf(list);
    var from = cards.indexOf(dragged);
    var to = cards.indexOf(card);
    if (from !== to) {
      if (from < to) list.insertBefore(dragged, card.nextSibling);
      else list.insertBefore(dragged, card);
      renumber(list);
      status(list, "Moved " + dragged.getAttribute("data-label") + " to position " + (to + 1) + " of " + cards.length + ".");
    }
    focusCard(list, dragged);
  });

  document.addEventListener("dragend", function () {
    if (dragged) dragged.classList.remove("is-dragging");
    dragged = null;
  });

  // --- Graphs ---------------------------------------------------------------------------------

  function edgeBox(graph, cause, effect) {
    var found = null;
    graph.querySelectorAll("[data-edge-from]").forEach(function (box) {
      if (box.getAttribute("data-edge-from") === cause && box.getAttribute("data-edge-to") === effect) found = box;
    });
    return found;
  }

  function labelOf(graph, node) {
    var button = null;
    graph.querySelectorAll("[data-event]").forEach(function (b) { if (b.getAttribute("data-event") === node) button = b; });
    return button ? button.getAttribute("data-label") : node;
  }

  function drawEdges(graph) {
    var list = graph.querySelector("[data-edge-list]");
    list.querySelectorAll("[data-edge-item]").forEach(function (li) { li.remove(); });
    var count = 0;
    graph.querySelectorAll("[data-edge-from]").forEach(function (box) {
      if (!box.checked) return;
      count += 1;
      var li = document.createElement("li");
      li.setAttribute("data-edge-item", "");
      var text = labelOf(graph, box.getAttribute("data-edge-from")) + " → " + labelOf(graph, box.getAttribute("data-edge-to"));
      li.appendChild(document.createTextNode(text + " "));
      var remove = document.createElement("button");
      remove.type = "button";
      remove.className = "button secondary small";
      remove.textContent = "Remove";
      remove.setAttribute("aria-label", "Remove " + text);
      remove.setAttribute("data-remove-edge", "");
      remove.addEventListener("click", function () {
        box.checked = false;
        drawEdges(graph);
        status(graph, "Removed " + text + ".");
      });
      li.appendChild(remove);
      list.appendChild(li);
    });
    list.querySelector("[data-no-edges]").hidden = count > 0;
  }

  function pick(graph, button) {
    var node = button.getAttribute("data-event");
    var source = graph.getAttribute("data-source");
    graph.querySelectorAll("[data-event]").forEach(function (b) { b.setAttribute("aria-pressed", "false"); });
    if (!source) {
      graph.setAttribute("data-source", node);
      button.setAttribute("aria-pressed", "true");
      status(graph, "Cause: " + button.getAttribute("data-label") + ". Now pick its effect.");
      return;
    }
    graph.removeAttribute("data-source");
    if (source === node) {
      status(graph, "Cause cleared.");
      return;
    }
    var box = edgeBox(graph, source, node);
    if (!box) return;
    box.checked = !box.checked;
    drawEdges(graph);
    var text = labelOf(graph, source) + " → " + button.getAttribute("data-label");
    status(graph, (box.checked ? "Added " : "Removed ") + text + ".");
  }

  function initGraph(graph) {
    if (graph.hasAttribute("data-wired")) return;
    graph.setAttribute("data-wired", "");
    showScripted(graph);
    var grid = graph.querySelector("[data-edge-grid]");
    if (grid) grid.hidden = true;
    var buttons = graph.querySelectorAll("[data-event]");
    buttons.forEach(function (b, index) { b.tabIndex = index === 0 ? 0 : -1; });
    drawEdges(graph);
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-event]");
    if (button) {
      pick(button.closest("[data-narrative-graph]"), button);
      return;
    }
    var mover = event.target.closest && event.target.closest("[data-move]");
    if (mover) {
      event.preventDefault();
      move(mover.closest("[data-card]"), parseInt(mover.getAttribute("data-move"), 10));
    }
  });

  // --- Keys -----------------------------------------------------------------------------------

  function roving(items, current, step) {
    var index = items.indexOf(current);
    var next = index < 0 ? 0 : Math.max(0, Math.min(items.length - 1, index + step));
    return items[next];
  }

  document.addEventListener(
    "keydown",
    function (event) {
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      var region = document.getElementById("annotate");
      if (!region || (!region.contains(event.target) && event.target !== document.body)) return;
      var tag = event.target.tagName ? event.target.tagName.toLowerCase() : "";
      if (tag === "input" || tag === "textarea" || tag === "select") return;
      var overlay = document.getElementById("help-overlay");
      if (overlay && !overlay.hidden) return;
      var key = event.key;
      // Enter on an event button submits (Space picks it), as Enter does everywhere else.
      if (key === "Enter" && event.target.closest && event.target.closest("[data-event]")) {
        var submit = region.querySelector('.item-form [data-key="Enter"]');
        event.preventDefault();
        event.stopPropagation();
        if (submit && !submit.disabled) submit.click();
        return;
      }
      var down = key === "ArrowDown" || key === "j" || key === "J";
      var up = key === "ArrowUp" || key === "k" || key === "K";
      var list = region.querySelector("[data-cards]");
      if (list && (down || up)) {
        var cards = cardsOf(list);
        var card = event.target.closest && event.target.closest("[data-card]");
        var moving = event.shiftKey && card;
        event.preventDefault();
        event.stopPropagation();
        if (moving) {
          move(card, down ? 1 : -1);
        } else {
          var next = roving(cards, card, down ? 1 : -1);
          focusCard(list, next);
          status(list, next.getAttribute("aria-label") + ".");
        }
        return;
      }
      var graph = region.querySelector("[data-narrative-graph]");
      if (graph && (down || up)) {
        var buttons = Array.prototype.slice.call(graph.querySelectorAll("[data-event]"));
        var current = event.target.closest && event.target.closest("[data-event]");
        var target = roving(buttons, current, down ? 1 : -1);
        buttons.forEach(function (b) { b.tabIndex = b === target ? 0 : -1; });
        target.focus();
        event.preventDefault();
        event.stopPropagation();
      }
    },
    true
  );

  // static/js/annotate.js shows [data-needs-js] once, at page load; an item swapped in by htmx
  // brings its own, shown here.
  function showScripted(element) {
    var form = element.closest("form") || element;
    form.querySelectorAll("[data-needs-js]").forEach(function (e) { e.hidden = false; });
  }

  function init(root) {
    (root || document).querySelectorAll("[data-cards]").forEach(initOrder);
    (root || document).querySelectorAll("[data-narrative-graph]").forEach(initGraph);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { init(document); });
  } else {
    init(document);
  }
  document.addEventListener("htmx:load", function (event) { init(event.target); });
})();
