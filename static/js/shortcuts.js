/* The person's choice for single-character shortcuts (WCAG 2.1.4), applied before any page's keys.
 * <body data-shortcuts>: "single" (as the pages define them), "modifier" (only with Alt held:
 * Alt+a acts as a) or "off". Runs in the capture phase on window, so it sees every keydown first;
 * it never prevents the browser's own handling (typing, Space on a focused button). */
(function () {
  "use strict";
  const TEXT_INPUTS = /^(text|search|email|url|tel|password|number|date|time|datetime-local|month|week)$/;

  function typing(target) {
    if (!(target instanceof Element)) return false;
    if (target.closest("textarea, select, [contenteditable=''], [contenteditable=true]")) return true;
    return target.tagName === "INPUT" && TEXT_INPUTS.test(target.type || "text");
  }

  /* One keyboard model for the pages that label (workbench, review, rating, spot check):
   * - a focused checkbox, radio, button or player keeps its own Space (tick, choose, press, play:
   *   a page's Space on top of a focused player's would start two recordings at once);
   * - release(): a choice made with a key leaves no form control focused that the next key would
   *   change (arrows on a radio group, type-ahead on a select); focus goes back to the page, or
   *   stays on a focused waveform, whose keys are the page's own;
   * - Esc always releases focus (bind());
   * - list(): the hints shown, written from the same table the handlers run; use() lists and
   *   binds one table, so a page's hints and keys cannot disagree. */
  function ownsSpace(target) {
    return target instanceof Element && target.matches("button, a[href], summary, input[type=checkbox], input[type=radio], input[type=button], input[type=submit], audio[controls], video[controls]");
  }

  function release() {
    const focused = document.activeElement;
    if (!focused || focused === document.body || focused.closest("[data-focus-keys]")) return;
    focused.blur();
  }

  function bind(handler) {
    document.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && !event.ctrlKey && !event.metaKey && !event.altKey) {
        const focused = document.activeElement;
        if (focused && focused !== document.body) focused.blur();
      }
      handler(event);
    });
  }

  /* Each row: { keys: "← →", hint: "Back / forward 1 s", when?: () => bool }. The node keeps its
   * table, so keys(node) says which rows the list shows (what the pages' tests compare). */
  function list(node, table) {
    if (!node) return;
    node.echoTable = table;
    node.textContent = "";
    table.forEach(function (row) {
      if (row.when && !row.when()) return;
      const term = document.createElement("dt");
      const kbd = document.createElement("kbd");
      kbd.textContent = row.keys;
      term.appendChild(kbd);
      const description = document.createElement("dd");
      description.textContent = row.hint;
      node.append(term, description);
    });
  }

  function keys(node) {
    return ((node && node.echoTable) || []).filter((row) => !row.when || row.when()).map((row) => row.keys);
  }

  /* A page's keys from one table: its hints are listed into node, and a keydown runs the first
   * row whose on(event) holds (rows also have run(event)), unless skip(event) says the key is not
   * the page's (typing in a text box, a modifier held). Esc releases focus first (bind). */
  function use(node, table, skip) {
    list(node, table);
    bind(function (event) {
      if (skip && skip(event)) return;
      const row = table.find((r) => r.on(event));
      if (row) row.run(event);
    });
  }

  window.EchoKeys = { typing: typing, ownsSpace: ownsSpace, release: release, bind: bind, list: list, keys: keys, use: use };

  window.addEventListener("keydown", function (event) {
    const mode = document.body && document.body.dataset.shortcuts;
    if (!mode || mode === "single" || event.key.length !== 1 || event.ctrlKey || event.metaKey) return;
    if (typing(event.target)) return;
    // Keys a focused component answers (a waveform's Space, + and −) are no shortcuts: WCAG 2.1.4
    // exempts keys that act only while their component has focus. The component lists them.
    const owner = event.target instanceof Element && event.target.closest("[data-focus-keys]");
    if (owner && !event.altKey && owner.dataset.focusKeys.includes(event.key)) return;
    if (mode === "modifier" && event.altKey) {
      // Hand the page the key as if pressed alone; its handlers read event.key and the modifiers.
      // With Alt held the key may be another character (Option+s is "ß" on a Mac), so letters and
      // digits come from the key's place, and a letter with Shift is the capital (Shift+S).
      event.stopImmediatePropagation();
      const letter = event.code.startsWith("Key") ? event.code.slice(3) : "";
      const key = letter ? (event.shiftKey ? letter : letter.toLowerCase())
        : event.code.startsWith("Digit") ? event.code.slice(5) : event.key;
      const plain = new KeyboardEvent("keydown", { key: key, code: event.code, shiftKey: event.shiftKey, bubbles: true, cancelable: true });
      plain.echoShortcut = true;
      if (!event.target.dispatchEvent(plain)) event.preventDefault();
      return;
    }
    if (event.echoShortcut) return;
    event.stopImmediatePropagation();
  }, true);
})();
