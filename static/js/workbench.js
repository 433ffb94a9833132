/* The annotation workbench and adjudication pages: waveform with pitch/energy contours, playback
 * speed, stressed-word picking, emotion segments as waveform regions, keyboard shortcuts, and the
 * autosave's edge cases (409 messages, saving on page hide). Autosave itself is htmx on the form.
 * Uses the vendored wavesurfer.js 7 and its regions plugin when the page has audio. */
(function () {
  "use strict";

  const form = document.querySelector("form[data-workbench]");
  const panel = document.querySelector("[data-waveform]");
  const state = { ws: null, regions: null, dirty: false, edits: 0, sentEdits: 0 };

  function changed() {
    if (form) form.dispatchEvent(new Event("labels-changed", { bubbles: true }));
  }

  function field(name) {
    return form ? form.elements.namedItem(name) : null;
  }

  /* --- Waveform, contours and playback ---------------------------------------------------- */

  function initWaveform() {
    if (!panel || !panel.dataset.audioUrl || typeof WaveSurfer === "undefined") return;
    const container = panel.querySelector(".waveform");
    const plugins = [];
    if (WaveSurfer.Regions) {
      state.regions = WaveSurfer.Regions.create();
      plugins.push(state.regions);
    }
    state.ws = WaveSurfer.create({
      container: container,
      url: panel.dataset.audioUrl,
      height: 110,
      waveColor: "#a9b4c8",
      progressColor: "#5b6477",
      cursorColor: "#1d2433",
      plugins: plugins,
    });
    const time = document.querySelector("[data-role=time]");
    const play = document.querySelector("[data-action=play]");
    state.ws.on("timeupdate", (seconds) => { if (time) time.textContent = seconds.toFixed(2) + " s"; });
    state.ws.on("play", () => { if (play) play.textContent = "Pause"; });
    state.ws.on("pause", () => { if (play) play.textContent = "Play"; });
    state.ws.on("ready", () => { panel.dataset.ready = "true"; drawContours(); segments.restoreRegions(); });
    if (play) play.addEventListener("click", () => state.ws.playPause());
    const speed = document.querySelector("[data-role=speed]");
    if (speed) speed.addEventListener("change", () => state.ws.setPlaybackRate(parseFloat(speed.value), true));
    window.addEventListener("resize", drawContours);
  }

  function drawContours() {
    const canvas = panel && panel.querySelector("canvas.contours");
    const dataNode = document.getElementById("contours-data");
    if (!canvas || !dataNode || !state.ws) return;
    const contours = JSON.parse(dataNode.textContent || "{}");
    const box = panel.querySelector(".waveform");
    const ratio = window.devicePixelRatio || 1;
    const width = box.clientWidth, height = box.clientHeight;
    canvas.width = width * ratio;
    canvas.height = height * ratio;
    canvas.style.width = width + "px";
    canvas.style.height = height + "px";
    const context = canvas.getContext("2d");
    context.scale(ratio, ratio);
    const duration = state.ws.getDuration() || 1;
    [["pitch", "#2f5bd3"], ["energy", "#d9822b"]].forEach(([name, colour]) => {
      const points = contours[name] || [];
      if (points.length < 2) return;
      const values = points.map((p) => p[1]);
      const low = Math.min.apply(null, values), high = Math.max.apply(null, values);
      const span = high - low || 1;
      context.strokeStyle = colour;
      context.lineWidth = 1.5;
      // Unvoiced frames are missing from the points: a step well above the usual one is a gap,
      // left open rather than bridged by a line.
      const steps = points.slice(1).map((p, i) => p[0] - points[i][0]).sort((a, b) => a - b);
      const gap = 2.5 * steps[Math.floor(steps.length / 2)];
      context.beginPath();
      let previous = null;
      points.forEach(([t, v]) => {
        const x = (t / duration) * width;
        const y = height - 6 - ((v - low) / span) * (height - 12);
        if (previous === null || t - previous > gap) context.moveTo(x, y); else context.lineTo(x, y);
        previous = t;
      });
      context.stroke();
    });
  }

  function playhead() {
    return state.ws ? state.ws.getCurrentTime() : 0;
  }

  /* --- Stressed words ------------------------------------------------------------------------ */

  function initWordPickers() {
    document.querySelectorAll("[data-word-picker]").forEach((picker) => {
      const input = field(picker.dataset.target);
      if (!input) return;
      const buttons = Array.from(picker.querySelectorAll("button.word"));
      // Restore: match the saved words to script positions in order (a word may occur twice).
      let after = -1;
      JSON.parse(input.value || "[]").forEach((word) => {
        const lower = word.toLowerCase();
        let match = buttons.find((b, i) => i > after && b.dataset.word.toLowerCase() === lower && b.getAttribute("aria-pressed") !== "true");
        if (!match) match = buttons.find((b) => b.dataset.word.toLowerCase() === lower && b.getAttribute("aria-pressed") !== "true");
        if (match) { match.setAttribute("aria-pressed", "true"); after = buttons.indexOf(match); }
      });
      const sync = () => {
        const words = buttons.filter((b) => b.getAttribute("aria-pressed") === "true").map((b) => b.dataset.word);
        input.value = JSON.stringify(words);
        document.querySelectorAll("[data-stressed-summary]").forEach((node) => { node.textContent = words.join(", ") || "none yet"; });
      };
      buttons.forEach((button) => button.addEventListener("click", () => {
        button.setAttribute("aria-pressed", button.getAttribute("aria-pressed") === "true" ? "false" : "true");
        sync();
        changed();
      }));
      sync();
    });
  }

  /* --- Emotion segments (emotion-shift items) ---------------------------------------------- */

  const segments = {
    table: document.querySelector("table[data-segments]"),
    list: [],

    init() {
      if (!this.table || !form) return;
      this.emotions = this.table.dataset.emotions.split(",");
      this.list = JSON.parse(field("p_emotion_segments").value || "[]");
      this.editable = panel && panel.dataset.segmentsEditable === "true";
      this.render();
      const add = document.querySelector("[data-action=add-segment]");
      if (add) add.addEventListener("click", () => this.addAtPlayhead());
      if (state.regions && this.editable) {
        state.regions.enableDragSelection({ color: "rgba(47, 91, 211, 0.18)" });
        state.regions.on("region-created", (region) => {
          if (this.restoring) return;
          this.list.push({ start: region.start, end: region.end, emotion: "", words: "", regionId: region.id });
          this.save();
        });
        state.regions.on("region-updated", (region) => {
          const segment = this.list.find((s) => s.regionId === region.id);
          if (segment) { segment.start = region.start; segment.end = region.end; this.save(); }
        });
      }
    },

    restoreRegions() {
      if (!this.table || !state.regions || !panel || panel.dataset.ready !== "true") return;
      this.restoring = true;
      state.regions.clearRegions();
      this.list.forEach((segment) => {
        const region = state.regions.addRegion({
          start: segment.start, end: segment.end, color: "rgba(47, 91, 211, 0.18)",
          drag: !!this.editable, resize: !!this.editable, content: segment.emotion || "?",
        });
        segment.regionId = region.id;
      });
      this.restoring = false;
    },

    addAtPlayhead() {
      const start = this.list.length ? Math.max.apply(null, this.list.map((s) => s.end)) : 0;
      let end = playhead() > start + 0.1 ? playhead() : start + 1.0;
      const duration = state.ws ? state.ws.getDuration() : 0;
      if (duration && end > duration) end = duration;
      if (end <= start) return;
      this.list.push({ start: start, end: end, emotion: "", words: "" });
      this.save();
      this.restoreRegions();
      const rows = this.table.querySelectorAll("tbody tr");
      const select = rows.length && rows[rows.length - 1].querySelector("select");
      if (select) select.focus();
    },

    save() {
      this.list.sort((a, b) => a.start - b.start);
      field("p_emotion_segments").value = JSON.stringify(this.list.map((s) => ({
        start: Math.round(s.start * 100) / 100, end: Math.round(s.end * 100) / 100, emotion: s.emotion, words: s.words,
      })));
      this.render();
      changed();
    },

    render() {
      const body = this.table.querySelector("tbody");
      body.innerHTML = "";
      this.list.forEach((segment, index) => {
        const row = document.createElement("tr");
        const disabled = this.editable ? "" : " disabled";
        row.innerHTML =
          `<td><input type="number" step="0.01" min="0" data-key="start" aria-label="Segment ${index + 1} start"${disabled}></td>` +
          `<td><input type="number" step="0.01" min="0" data-key="end" aria-label="Segment ${index + 1} end"${disabled}></td>` +
          `<td><select data-key="emotion" aria-label="Segment ${index + 1} emotion"${disabled}><option value="">—</option>` +
          this.emotions.map((e) => `<option value="${e}">${e}</option>`).join("") + `</select></td>` +
          `<td><input type="text" data-key="words" aria-label="Segment ${index + 1} words"${disabled}></td>` +
          `<td>${this.editable ? '<button type="button" class="link" data-remove>Remove</button>' : ""}</td>`;
        row.querySelector("[data-key=start]").value = segment.start.toFixed(2);
        row.querySelector("[data-key=end]").value = segment.end.toFixed(2);
        row.querySelector("[data-key=emotion]").value = segment.emotion;
        row.querySelector("[data-key=words]").value = segment.words;
        row.querySelectorAll("[data-key]").forEach((input) => {
          // The segment inputs feed the hidden JSON field; keep their own events away from htmx.
          input.addEventListener("input", (event) => event.stopPropagation());
          input.addEventListener("change", () => {
            const key = input.dataset.key;
            segment[key] = key === "start" || key === "end" ? parseFloat(input.value) || 0 : input.value;
            this.save();
            this.restoreRegions();
          });
        });
        const remove = row.querySelector("[data-remove]");
        if (remove) remove.addEventListener("click", () => { this.list.splice(index, 1); this.save(); this.restoreRegions(); });
        body.appendChild(row);
      });
    },
  };

  /* --- Small helpers: copy a value, append a line ------------------------------------------ */

  function initCopyButtons() {
    document.addEventListener("click", (event) => {
      const copy = event.target.closest("[data-copy-value]");
      const append = event.target.closest("[data-append-line]");
      const button = copy || append;
      if (!button) return;
      const target = field(button.dataset.target);
      if (!target) return;
      if (copy) {
        target.value = copy.dataset.copyValue;
      } else {
        const lines = target.value.split("\n").map((l) => l.trim()).filter(Boolean);
        if (!lines.includes(append.dataset.appendLine)) lines.push(append.dataset.appendLine);
        target.value = lines.join("\n");
      }
      target.dispatchEvent(new Event("input", { bubbles: true }));
    });
  }

  /* --- Keyboard shortcuts ------------------------------------------------------------------- */

  function choose(name, index) {
    const radios = form.querySelectorAll(`input[type=radio][name="${name}"]`);
    const radio = radios[index];
    if (!radio || radio.disabled) return;
    radio.checked = true;
    radio.dispatchEvent(new Event("input", { bubbles: true }));
    radio.focus();
  }

  function initShortcuts() {
    if (!form || !form.hasAttribute("data-shortcuts")) return;
    document.addEventListener("keydown", (event) => {
      const target = event.target;
      const typing = target.matches("textarea, input[type=text], input[type=number], select");
      if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "s") {
        event.preventDefault();
        if (window.htmx) htmx.trigger(form, "save-now");
        return;
      }
      if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
        event.preventDefault();
        form.requestSubmit();
        return;
      }
      if (event.key === "Escape" && typing) { target.blur(); return; }
      if (typing || event.ctrlKey || event.metaKey) return;
      const digit = /^Digit([1-9])$/.exec(event.code);
      if (event.code === "Space") {
        event.preventDefault();
        if (state.ws) state.ws.playPause();
      } else if ((event.key === "ArrowLeft" || event.key === "ArrowRight") && !target.matches("input[type=radio]")) {
        event.preventDefault();
        if (state.ws) state.ws.setTime(Math.max(0, playhead() + (event.key === "ArrowLeft" ? -1 : 1)));
      } else if (event.key === "[" || event.key === "]") {
        const speed = document.querySelector("[data-role=speed]");
        if (!speed) return;
        const next = speed.selectedIndex + (event.key === "[" ? -1 : 1);
        if (next >= 0 && next < speed.options.length) { speed.selectedIndex = next; speed.dispatchEvent(new Event("change")); }
      } else if (digit && event.altKey) {
        event.preventDefault();
        choose("p_intensity", Number(digit[1]) - 1);
      } else if (digit && event.shiftKey) {
        event.preventDefault();
        choose("p_polarity", Number(digit[1]) - 1);
      } else if (digit) {
        event.preventDefault();
        choose("p_emotion", Number(digit[1]) - 1);
      } else if (event.key === "g" && segments.table && segments.editable) {
        event.preventDefault();
        segments.addAtPlayhead();
      }
    });
  }

  /* --- Autosave edges: refusals, unsaved work on page hide --------------------------------- */

  function initAutosave() {
    if (!form || !form.hasAttribute("hx-post")) return;
    const status = document.getElementById("save-status");
    form.addEventListener("input", () => { state.dirty = true; state.edits += 1; });
    form.addEventListener("labels-changed", () => { state.dirty = true; state.edits += 1; });
    document.body.addEventListener("htmx:beforeRequest", (event) => {
      if (event.detail.elt !== form) return;
      // After a refusal for staleness, saving again would only be refused again: stop and ask for a reload.
      if (form.dataset.stale === "true") { event.preventDefault(); return; }
      state.sentEdits = state.edits;
    });
    document.body.addEventListener("htmx:beforeSwap", (event) => {
      const code = event.detail.xhr.status;
      if (code === 409 || code === 400) { event.detail.shouldSwap = true; event.detail.isError = false; }
    });
    document.body.addEventListener("htmx:afterSwap", (event) => {
      if (event.detail.elt !== form && event.detail.target !== status) return;
      if (status.querySelector("[data-stale]")) form.dataset.stale = "true";
      if (event.detail.xhr.status === 200 && state.edits === state.sentEdits) state.dirty = false;
    });
    window.addEventListener("pagehide", () => {
      if (state.dirty && form.dataset.stale !== "true") navigator.sendBeacon(form.getAttribute("hx-post"), new FormData(form));
    });
  }

  initWaveform();
  initWordPickers();
  segments.init();
  initCopyButtons();
  initShortcuts();
  initAutosave();
})();
