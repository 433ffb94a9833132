/* The workbench never loses a keystroke:
 * - undo/redo (Ctrl+Z, Ctrl+Shift+Z or Ctrl+Y, and the Undo/Redo buttons), one step per edit (a
 *   key, a click, a drag) however quick; a run of typing in one text box is one step, and inside
 *   the box the browser's own undo steps through its characters;
 * - a refused submit stays on the page (sent with fetch): its messages are swapped in, the undo
 *   history and the browser's copy stay;
 * - a copy of the labels in this browser (localStorage) from each change until the server has
 *   taken it: a refused save (another tab saved, the connection dropped, the server said no)
 *   keeps it, and the next visit offers it back;
 * - autosave's edges: refusal messages swapped in (400/409), no retry after a stale refusal,
 *   unsaved work sent on page hide.
 * Autosave itself is htmx on the form; static/js/workbench.js exposes window.EchoWorkbench. */
(function () {
  "use strict";
  const bench = window.EchoWorkbench;
  if (!bench || !bench.form || !bench.form.hasAttribute("hx-post")) return;
  const form = bench.form;
  const status = document.getElementById("save-status");
  const storageKey = "echostudio.workbench." + (form.dataset.keepKey || form.getAttribute("hx-post"));
  const HISTORY_LIMIT = 200;
  const state = { dirty: false, edits: 0, sentEdits: 0, applying: false, submitting: false, inFlight: 0 };
  const idleWaiters = [];

  /* --- This tab's id, sent with every save ---------------------------------------------------- */
  /* Kept in sessionStorage, so it outlives a reload but not the tab: a save the page a reload
   * replaced sent on its way out (page-hide) is then known for this tab's own, and the reloaded
   * page's next save is not refused as if another tab had made it (workflows.save_draft). */
  const NOT_LABELS = ["csrfmiddlewaretoken", "version", "page_session"];
  (function tabId() {
    const input = form.elements.namedItem("page_session");
    if (!input) return;
    let id = "";
    try { id = window.sessionStorage.getItem("echostudio.page-session") || ""; } catch (error) { /* private mode */ }
    if (!id) {
      id = window.crypto && crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + "-" + String(Math.random()).slice(2, 12);
      try { window.sessionStorage.setItem("echostudio.page-session", id); } catch (error) { /* this page only */ }
    }
    input.value = id;
  })();

  /* --- The labels as one string: every field but the CSRF token, the version and the tab id -- */

  function snapshot() {
    const entries = [];
    new FormData(form).forEach((value, name) => {
      if (!NOT_LABELS.includes(name)) entries.push([name, String(value)]);
    });
    return JSON.stringify(entries);
  }

  function apply(serialised) {
    const values = new Map();
    JSON.parse(serialised).forEach(([name, value]) => {
      if (!values.has(name)) values.set(name, []);
      values.get(name).push(value);
    });
    Array.from(form.elements).forEach((element) => {
      const name = element.name;
      if (!name || NOT_LABELS.includes(name) || element.tagName === "BUTTON") return;
      const given = values.get(name) || [];
      if (element.type === "radio") element.checked = given.includes(element.value);
      // A checkbox group (the cross-turn strategies) shares a name: each box has its own value.
      else if (element.type === "checkbox") element.checked = element.value === "on" ? given.length > 0 : given.includes(element.value);
      else element.value = given.length ? given[0] : "";
    });
    bench.refresh();
    // Counts as a change: autosave sends it, the browser keeps a copy; it is not a new undo step.
    state.applying = true;
    form.dispatchEvent(new Event("labels-changed", { bubbles: true }));
    state.applying = false;
  }

  /* --- The browser's copy ---------------------------------------------------------------------- */

  function keepInBrowser() {
    try {
      window.localStorage.setItem(storageKey, JSON.stringify({ keptAt: Date.now(), labels: snapshot() }));
    } catch (error) { /* storage full or refused: autosave still runs */ }
  }

  function kept() {
    try { return JSON.parse(window.localStorage.getItem(storageKey) || "null"); } catch (error) { return null; }
  }

  function forget() {
    try { window.localStorage.removeItem(storageKey); } catch (error) { /* nothing kept */ }
  }

  function offerKeptCopy() {
    const copy = kept();
    if (!copy || !copy.labels) return;
    if (copy.labels === snapshot()) { forget(); return; } // the server has all of it
    const banner = document.querySelector("[data-restore-banner]");
    if (!banner) return;
    const when = banner.querySelector("[data-kept-at]");
    if (when) when.textContent = new Date(copy.keptAt).toLocaleString();
    banner.hidden = false;
    banner.querySelector("[data-action=restore]").addEventListener("click", () => {
      banner.hidden = true;
      recordNow(null);
      apply(copy.labels);
      recordNow(null);
    });
    banner.querySelector("[data-action=discard]").addEventListener("click", () => {
      banner.hidden = true;
      forget();
    });
  }

  /* --- Undo and redo ------------------------------------------------------------------------------ */

  const history = { past: [], future: [], current: snapshot() };
  const undoButton = document.querySelector("[data-action=undo]");
  const redoButton = document.querySelector("[data-action=redo]");
  // The text box whose run of typing the newest step holds (null: the newest step is closed).
  let typingIn = null;

  function showHistory() {
    if (undoButton) undoButton.disabled = history.past.length === 0;
    if (redoButton) redoButton.disabled = history.future.length === 0;
    form.dataset.undoSteps = String(history.past.length);
    form.dataset.redoSteps = String(history.future.length);
  }

  function typingBox() {
    const box = document.activeElement;
    return box && form.contains(box) && box.matches("textarea, input[type=text], input[type=number]") ? box : null;
  }

  /* Take the form as it is now as a step. Each edit is its own step, at once: merging by time
   * (edits 400 ms apart were one step) made one Ctrl+Z revert a whole fast keyboard run. */
  function recordNow(box) {
    const now = snapshot();
    if (now === history.current) return;
    if (box && box === typingIn) {
      history.current = now; // the same run of typing: the step grows
    } else {
      history.past.push(history.current);
      if (history.past.length > HISTORY_LIMIT) history.past.shift();
      history.current = now;
    }
    typingIn = box || null;
    history.future = [];
    showHistory();
  }

  function step(from, to) {
    recordNow(null);
    typingIn = null;
    if (!from.length) return;
    to.push(history.current);
    history.current = from.pop();
    apply(history.current);
    showHistory();
  }

  const undo = () => step(history.past, history.future);
  const redo = () => step(history.future, history.past);

  if (undoButton) undoButton.addEventListener("click", undo);
  if (redoButton) redoButton.addEventListener("click", redo);
  // Ctrl+Z and Ctrl+Shift+Z are rows of the workbench's shortcut table (static/js/workbench.js).
  bench.undo = undo;
  bench.redo = redo;

  /* --- Autosave's edges ---------------------------------------------------------------------- */

  function changedNow() {
    state.dirty = true;
    state.edits += 1;
    keepInBrowser();
    if (!state.applying) recordNow(typingBox());
  }

  /* Say (once per refusal) that the work is safe here; the status keeps its version input. */
  function sayKept(reason) {
    if (!status || status.querySelector("[data-kept-note]")) return;
    const note = document.createElement("span");
    note.className = "open-problems";
    note.setAttribute("data-kept-note", "true");
    note.setAttribute("data-testid", "kept-note");
    note.textContent = (reason ? reason + " " : "") +
      "Your changes are kept in this browser and offered back when you reload.";
    status.appendChild(note);
  }

  form.addEventListener("input", changedNow);
  form.addEventListener("focusout", () => { typingIn = null; });
  form.addEventListener("labels-changed", changedNow);
  document.body.addEventListener("htmx:beforeRequest", (event) => {
    if (event.detail.elt !== form) return;
    // After a refusal for staleness, saving again would only be refused again: stop and ask for a reload.
    if (form.dataset.stale === "true") { event.preventDefault(); sayKept(); return; }
    // A submit carries the same labels and saves them as a draft when refused: an autosave beside
    // it would be judged against the version the submit replaced.
    if (state.submitting) { event.preventDefault(); return; }
    state.sentEdits = state.edits;
    state.inFlight += 1;
  });
  document.body.addEventListener("htmx:afterRequest", (event) => {
    if (event.detail.elt !== form) return;
    state.inFlight = Math.max(0, state.inFlight - 1);
    if (!state.inFlight) idleWaiters.splice(0).forEach((resolve) => resolve());
  });
  document.body.addEventListener("htmx:beforeSwap", (event) => {
    const code = event.detail.xhr.status;
    if (code === 409 || code === 400) { event.detail.shouldSwap = true; event.detail.isError = false; }
  });
  document.body.addEventListener("htmx:afterSwap", (event) => {
    if (event.detail.elt !== form && event.detail.target !== status) return;
    if (status.querySelector("[data-stale]")) form.dataset.stale = "true";
    if (event.detail.xhr.status === 200) {
      if (state.edits === state.sentEdits) { state.dirty = false; forget(); }
    } else {
      sayKept();
    }
  });
  document.body.addEventListener("htmx:sendError", (event) => {
    if (event.detail.elt !== form) return;
    sayKept("Not saved: the server could not be reached.");
  });
  /* --- Submitting: sent with fetch, so a refusal keeps this page and its undo history ------- */

  function autosaveIdle() {
    if (!state.inFlight) return Promise.resolve();
    return new Promise((resolve) => { idleWaiters.push(resolve); setTimeout(resolve, 5000); });
  }

  /* Put the refused page's messages and field marks into this page; its values are ours. */
  function showRefusal(page, code) {
    const refusal = document.getElementById("submit-refusal");
    const theirs = page.getElementById("submit-refusal");
    if (refusal && theirs) refusal.innerHTML = theirs.innerHTML;
    // Field marks: in the form, and on the segments table under the waveform.
    document.querySelectorAll("main .has-problem").forEach((node) => node.classList.remove("has-problem"));
    page.querySelectorAll("main .has-problem").forEach((node) => {
      const key = node.getAttribute("name") ? `[name="${node.getAttribute("name")}"]` : `[data-field="${node.dataset.field}"]`;
      const mine = document.querySelector("main " + key);
      if (mine) mine.classList.add("has-problem");
    });
    const theirStatus = page.getElementById("save-status");
    if (code === 409) {
      form.dataset.stale = "true"; // another tab saved: the newer version is not ours to write over
    } else if (theirStatus && status) {
      status.innerHTML = theirStatus.innerHTML; // the draft the refusal kept, and its new version
      if (state.edits === state.sentEdits) { state.dirty = false; forget(); }
    }
    if (refusal) { refusal.scrollIntoView({ block: "nearest" }); refusal.focus({ preventScroll: true }); }
  }

  form.addEventListener("submit", async (event) => {
    if (!window.fetch || !window.DOMParser) return; // the plain form post still works
    event.preventDefault();
    if (state.submitting) return;
    state.submitting = true;
    const button = form.querySelector("[type=submit]");
    if (button) button.disabled = true;
    try {
      await autosaveIdle();
      state.sentEdits = state.edits;
      // Marked as htmx's: the server then names the next page (HX-Redirect) rather than
      // redirecting, so its "Submitted" message is shown on that page, not to this fetch.
      const response = await fetch(form.action, {
        method: "POST", body: new FormData(form), credentials: "same-origin", headers: { "HX-Request": "true" },
      });
      const next = response.headers.get("HX-Redirect") || (response.redirected ? response.url : "");
      if (next) { state.dirty = false; forget(); window.location.assign(next); return; }
      if (response.status === 422 || response.status === 409) {
        showRefusal(new DOMParser().parseFromString(await response.text(), "text/html"), response.status);
      } else {
        sayKept("Not submitted: the server answered " + response.status + ".");
      }
    } catch (error) {
      sayKept("Not submitted: the server could not be reached.");
    } finally {
      state.submitting = false;
      if (button) button.disabled = false;
    }
  });

  window.addEventListener("pagehide", () => {
    if (state.dirty && form.dataset.stale !== "true") navigator.sendBeacon(form.getAttribute("hx-post"), new FormData(form));
  });

  showHistory();
  offerKeptCopy();
})();
