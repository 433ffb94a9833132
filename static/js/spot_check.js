// The spot-check decision: choosing "Fix" opens the fields a fix edits (and another verdict
// closes them), so the corrections are in view when they are asked for. Esc leaves whatever has
// focus, as on every labelling page (EchoKeys.bind, static/js/shortcuts.js).
(function () {
  "use strict";
  // The page's one key, listed from the table that binds it (EchoKeys.use).
  const SHORTCUTS = [
    { keys: "Esc", hint: "Leave whatever has focus (a text box, a list)", on: () => false, run: () => {} },
  ];
  if (window.EchoKeys) EchoKeys.use(document.querySelector("[data-shortcut-list]"), SHORTCUTS);
  const form = document.querySelector("[data-testid=decision-form]");
  const fields = document.querySelector("[data-testid=fix-fields]");
  if (!form || !fields) return;
  form.addEventListener("change", function (event) {
    if (event.target.name === "verdict") fields.open = event.target.value === "fix";
  });
})();
