/* METER evidence spans: words of the passage marked per question, kept as character offsets in
 * the form's hidden "spans" field ({"L1": [[start, end], …], …}). Mouse: press on a word and
 * release on another. Keyboard (the passage focused): ← → move, Shift+← → extend, Enter marks,
 * u undoes, 1–3 switch question (buttons with data-key, clicked by annotate.js). */
(function () {
  "use strict";
  function setup(root) {
    if (root.dataset.ready) return;
    root.dataset.ready = "1";
    var words = Array.prototype.slice.call(root.querySelectorAll(".tok"));
    var passage = root.querySelector("[data-passage]");
    var field = root.querySelector("[data-spans-value]");
    var list = root.querySelector("[data-span-list]");
    var levels = Array.prototype.slice.call(root.querySelectorAll("[data-level]"));
    var state = {}, history = [];
    levels.forEach(function (b) { state[b.dataset.level] = []; });
    var level = levels.length ? levels[0].dataset.level : "L1";
    var cursor = 0, anchor = 0, dragging = null;

    function save() {
      field.value = JSON.stringify(state);
      levels.forEach(function (b) {
        var n = state[b.dataset.level].length;
        root.querySelector('[data-count="' + b.dataset.level + '"]').textContent = n + " span" + (n === 1 ? "" : "s");
      });
      words.forEach(function (w) {
        var s = +w.dataset.s, e = +w.dataset.e;
        w.classList.toggle("marked", state[level].some(function (sp) { return sp[0] <= s && e <= sp[1]; }));
        var lo = Math.min(anchor, cursor), hi = Math.max(anchor, cursor);
        var i = words.indexOf(w);
        w.classList.toggle("selecting", document.activeElement === passage && i >= lo && i <= hi);
        w.classList.toggle("cursor", document.activeElement === passage && i === cursor);
      });
      list.innerHTML = "";
      state[level].forEach(function (sp) {
        var li = document.createElement("li");
        li.textContent = level + ": “" + passageText(sp) + "”";
        list.appendChild(li);
      });
    }
    function passageText(sp) {
      return words.filter(function (w) { return sp[0] <= +w.dataset.s && +w.dataset.e <= sp[1]; })
        .map(function (w) { return w.textContent; }).join(" ");
    }
    function mark(i, j) {
      var lo = Math.min(i, j), hi = Math.max(i, j);
      var span = [+words[lo].dataset.s, +words[hi].dataset.e];
      history.push({ level: level, before: state[level].map(function (s) { return s.slice(); }) });
      var merged = [];
      state[level].concat([span]).sort(function (a, b) { return a[0] - b[0]; }).forEach(function (sp) {
        var last = merged[merged.length - 1];
        if (last && sp[0] <= last[1]) last[1] = Math.max(last[1], sp[1]);
        else merged.push(sp.slice());
      });
      state[level] = merged;
      save();
    }
    levels.forEach(function (b) {
      b.addEventListener("click", function () {
        level = b.dataset.level;
        levels.forEach(function (o) {
          o.classList.toggle("current", o === b);
          o.setAttribute("aria-pressed", o === b ? "true" : "false");
        });
        passage.focus();
        save();
      });
    });
    root.querySelector("[data-spans-undo]").addEventListener("click", function () {
      var last = history.pop();
      if (last) { state[last.level] = last.before; save(); }
    });
    words.forEach(function (w, i) {
      w.addEventListener("mousedown", function (ev) { dragging = i; ev.preventDefault(); });
      w.addEventListener("mouseup", function () {
        if (dragging !== null) { mark(dragging, i); dragging = null; }
      });
    });
    passage.addEventListener("focus", save);
    passage.addEventListener("blur", save);
    passage.addEventListener("keydown", function (ev) {
      if (ev.key === "ArrowRight" || ev.key === "ArrowLeft") {
        cursor = Math.max(0, Math.min(words.length - 1, cursor + (ev.key === "ArrowRight" ? 1 : -1)));
        if (!ev.shiftKey) anchor = cursor;
        ev.preventDefault();
        save();
      } else if (ev.key === "Enter") {
        mark(anchor, cursor);
        anchor = cursor;
        ev.preventDefault();
        ev.stopPropagation();
      }
    });
    save();
  }
  function init(scope) {
    (scope || document).querySelectorAll("[data-spans]").forEach(setup);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", function () { init(); });
  else init();
  document.addEventListener("htmx:load", function (ev) { init(ev.target); });
})();
