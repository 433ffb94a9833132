// The spot-check decision: choosing "Fix" opens the fields a fix edits (and another verdict
// closes them), so the corrections are in view when they are asked for. Esc leaves whatever has
// focus, as on every labelling page (EchoKeys.bind, static/js/shortcuts.js).
(function () {
  "use strict";
  if (window.EchoKeys) EchoKeys.bind(function () {});
  const form = document.querySelector("[data-testid=decision-form]");
  const fields = document.querySelector("[data-testid=fix-fields]");
  if (!form || !fields) return;
  form.addEventListener("change", function (event) {
    if (event.target.name === "verdict") fields.open = event.target.value === "fix";
  });
})();
