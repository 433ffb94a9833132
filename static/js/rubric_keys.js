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

  function score(event) {
    const input = rows[active].querySelector(`input[type=radio][value="${event.key}"]`);
    event.preventDefault();
    if (!input) {
      if (hint) hint.textContent = `${event.key} is outside this sub-score's scale.`;
      return;
    }
    input.checked = true;
    EchoKeys.release(); // a focused radio here would take the next arrow as a score
    if (hint) hint.textContent = "";
  }

  function save(event) {
    event.preventDefault();
    const missing = rows.filter((row) => !chosen(row));
    if (missing.length) {
      activate(rows.indexOf(missing[0]));
      if (hint) hint.textContent = `Score every sub-score first (${missing.length} left).`;
      return;
    }
    form.requestSubmit();
  }

  // One table runs the keys and writes the page's list of them (EchoKeys.use, shortcuts.js).
  const SHORTCUTS = [
    { keys: "0 – 6", hint: "Score the highlighted line (as its scale allows)", on: (e) => /^[0-9]$/.test(e.key) && rows.length > 0, run: score },
    { keys: "↑ ↓", hint: "Move between lines (k j too)", on: (e) => ["ArrowUp", "ArrowDown", "k", "j"].includes(e.key),
      run: (e) => { e.preventDefault(); activate(active + (e.key === "ArrowUp" || e.key === "k" ? -1 : 1)); } },
    { keys: "Enter", hint: "Save and go to the next output", on: (e) => e.key === "Enter" && !e.target.matches("button, a"), run: save },
    { keys: "Esc", hint: "Leave the comment box (or whatever has focus)", on: () => false, run: () => {} },
  ];

  // Esc leaves whatever has focus (EchoKeys.bind, static/js/shortcuts.js).
  EchoKeys.use(document.querySelector("[data-shortcut-list]"), SHORTCUTS,
    (event) => event.altKey || event.ctrlKey || event.metaKey || event.target.matches("textarea, input[type=text]"));

  activate(firstUnanswered(-1) === -1 ? 0 : firstUnanswered(-1));
})();
