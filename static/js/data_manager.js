// The data manager (studio/templates/studio/items.html): a box that ticks every item on the page.
// Without JavaScript the box stays hidden and each item is ticked by hand (or "all matching").
document.addEventListener("DOMContentLoaded", () => {
  const all = document.querySelector(".dm-tick-all");
  if (!all) return;
  const boxes = () => document.querySelectorAll('input[name="items"][form="bulk"]');
  all.hidden = false;
  all.addEventListener("change", () => boxes().forEach((box) => { box.checked = all.checked; }));
});
document.addEventListener("DOMContentLoaded", () => {
  // A refused bulk action: bring its message into view and to the screen reader.
  const error = document.getElementById("bulk-error");
  if (error) error.focus();
});
