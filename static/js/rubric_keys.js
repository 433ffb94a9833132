// Rubric scoring by hand with the keyboard: the highlighted sub-score takes the digit pressed
// (0-6, as its scale allows) and stays there; up/down (or k/j) move the highlight, as the page's
// hint says (a digit that also moved on made digit-then-down skip every other line); Enter saves and goes to the next output. Typing in the comment box is
// never taken for a shortcut (Escape leaves it).
(function () {
  "use strict";
  const form = document.getElementById("rubric-form");
  if (!form) return;
  const rows = Array.from(form.querySelectorAll("[data-subscore]"));
  const hint = document.getElementById("rubric-hint");
  let active = 0;

  const chosen = (row) => row.querySelector("input[type=radio]:checked");

  function activate(index) {
    if (!rows.length) return;
    active = Math.max(0, Math.min(rows.length - 1, index));
    rows.forEach((row, i) => row.classList.toggle("active", i === active));
    rows[active].scrollIntoView({ block: "nearest" });
    form.dataset.active = rows[active].dataset.subscore;
  }

  function firstUnanswered(after) {
    const order = rows.map((row, i) => i).filter((i) => i > after).concat(rows.map((row, i) => i).filter((i) => i <= after));
    const found = order.find((i) => !chosen(rows[i]));
    return found === undefined ? after : found;
  }

  rows.forEach((row, index) => {
    row.addEventListener("click", () => activate(index));
    row.addEventListener("change", () => activate(index));
  });

  // Esc leaves whatever has focus (EchoKeys.bind, static/js/shortcuts.js).
  EchoKeys.bind((event) => {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.target.matches("textarea, input[type=text]")) return;
    if (/^[0-9]$/.test(event.key) && rows.length) {
      const input = rows[active].querySelector(`input[type=radio][value="${event.key}"]`);
      event.preventDefault();
      if (!input) {
        if (hint) hint.textContent = `${event.key} is outside this sub-score's scale.`;
        return;
      }
      input.checked = true;
      EchoKeys.release(); // a focused radio here would take the next arrow as a score
      if (hint) hint.textContent = "";
    } else if (event.key === "ArrowDown" || event.key === "j") {
      event.preventDefault();
      activate(active + 1);
    } else if (event.key === "ArrowUp" || event.key === "k") {
      event.preventDefault();
      activate(active - 1);
    } else if (event.key === "Enter" && !event.target.matches("button, a")) {
      event.preventDefault();
      const missing = rows.filter((row) => !chosen(row));
      if (missing.length) {
        activate(rows.indexOf(missing[0]));
        if (hint) hint.textContent = `Score every sub-score first (${missing.length} left).`;
        return;
      }
      form.requestSubmit();
    }
  });

  activate(firstUnanswered(-1) === -1 ? 0 : firstUnanswered(-1));
})();
