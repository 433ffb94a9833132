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

  window.addEventListener("keydown", function (event) {
    const mode = document.body && document.body.dataset.shortcuts;
    if (!mode || mode === "single" || event.key.length !== 1 || event.ctrlKey || event.metaKey) return;
    if (typing(event.target)) return;
    if (mode === "modifier" && event.altKey) {
      // Hand the page the key as if pressed alone; its handlers read event.key and the modifiers.
      event.stopImmediatePropagation();
      const key = event.code.startsWith("Key") ? event.code.slice(3).toLowerCase()
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
