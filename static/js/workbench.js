/* The annotation workbench and adjudication pages: waveform with pitch/energy contours, zoom and
 * playback speed (static/js/waveform.js), the word ruler (static/js/word_ruler.js), stressed-word
 * picking, emotion segments as waveform regions (mouse or keyboard: select, move, resize, label,
 * remove; mouse edges snap to word boundaries), and keyboard shortcuts.
 * Undo/redo, autosave refusals and the browser's copy of unsaved work: static/js/workbench_keep.js.
 * Uses the vendored wavesurfer.js 7 and its regions plugin when the page has audio. */
(function () {
  "use strict";

  const form = document.querySelector("form[data-workbench]");
  const panel = document.querySelector("[data-waveform]");
  const state = { ws: null, regions: null, words: null };

  function changed() {
    if (form) form.dispatchEvent(new Event("labels-changed", { bubbles: true }));
  }

  function field(name) {
    return form ? form.elements.namedItem(name) : null;
  }

  /* --- Waveform, contours and playback (the shared static/js/waveform.js) ------------------- */

  function initWaveform() {
    if (!panel || !panel.dataset.audioUrl || typeof WaveSurfer === "undefined") return;
    const container = panel.querySelector(".waveform");
    const plugins = [];
    if (WaveSurfer.Regions) {
      state.regions = WaveSurfer.Regions.create();
      // layoutLabels places every label; the plugin's own nudge (later regions only, run on a
      // timer of its own) would move labels after it and let them cover each other again.
      state.regions.avoidOverlapping = () => {};
      plugins.push(state.regions);
    }
    const dataNode = document.getElementById("contours-data");
    state.ws = EchoWaveform.create({
      container: container,
      subject: "the recording",
      url: panel.dataset.audioUrl,
      plugins: plugins,
      canvas: panel.querySelector("canvas.contours"),
      contours: dataNode ? JSON.parse(dataNode.textContent || "{}") : null,
      speedSelect: document.querySelector("[data-role=speed]"),
      // A long take: contours and words per window in view (issue 46).
      windowUrl: panel.dataset.windowUrl || "",
      onWindow: (data) => {
        if (!state.words) return;
        state.words.setWords(data.words, data.words_total, data.start, data.end);
      },
    });
    // The take's words under the waveform, and the word boundaries segment edges snap to.
    const wordView = document.querySelector("[data-word-ruler]");
    if (wordView && window.EchoWordRuler) state.words = EchoWordRuler.attach(state.ws, wordView);
    const time = document.querySelector("[data-role=time]");
    state.ws.on("timeupdate", (seconds) => { if (time) time.textContent = seconds.toFixed(2) + " s"; });
    EchoWaveform.bindPlayButton(state.ws, document.querySelector("[data-action=play]"));
    state.ws.on("ready", () => { panel.dataset.ready = "true"; segments.restoreRegions(); });
    ["zoom", "scroll", "redrawcomplete"].forEach((name) => state.ws.on(name, layoutLabels));
    document.querySelectorAll("[data-action=zoom-in], [data-action=zoom-out]").forEach((button) => {
      button.addEventListener("click", () => EchoWaveform.zoomBy(state.ws, container, button.dataset.action === "zoom-in" ? 1 : -1));
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
      const sync = () => {
        const words = buttons.filter((b) => b.getAttribute("aria-pressed") === "true").map((b) => b.dataset.word);
        input.value = JSON.stringify(words);
        document.querySelectorAll("[data-stressed-summary]").forEach((node) => { node.textContent = words.join(", ") || "none yet"; });
      };
      // Restore: match the saved words to script positions in order (a word may occur twice).
      picker.refresh = () => {
        buttons.forEach((b) => b.setAttribute("aria-pressed", "false"));
        let after = -1;
        JSON.parse(input.value || "[]").forEach((word) => {
          const lower = word.toLowerCase();
          let match = buttons.find((b, i) => i > after && b.dataset.word.toLowerCase() === lower && b.getAttribute("aria-pressed") !== "true");
          if (!match) match = buttons.find((b) => b.dataset.word.toLowerCase() === lower && b.getAttribute("aria-pressed") !== "true");
          if (match) { match.setAttribute("aria-pressed", "true"); after = buttons.indexOf(match); }
        });
        sync();
      };
      buttons.forEach((button) => button.addEventListener("click", () => {
        button.setAttribute("aria-pressed", button.getAttribute("aria-pressed") === "true" ? "false" : "true");
        sync();
        changed();
      }));
      picker.refresh();
    });
  }

  /* After the form's values were put back (undo, redo, a restore from the browser's copy). */
  function refreshFromFields() {
    document.querySelectorAll("[data-word-picker]").forEach((picker) => { if (picker.refresh) picker.refresh(); });
    segments.reload();
  }

  /* --- Emotion segments (emotion-shift items) ---------------------------------------------- */
  /* A segment may be incomplete (no emotion yet, an end typed before its start): autosave keeps it
   * and the server reports it; only submitting asks for it to be finished. */

  const REGION_COLOUR = "rgba(47, 91, 211, 0.18)";
  const ACTIVE_COLOUR = "rgba(211, 84, 0, 0.28)";
  const OVERLAP_COLOUR = "rgba(192, 57, 43, 0.30)";
  const LABEL_ROW_PX = 18;

  /* The numbers of the segments that start before the one before them ends: the server's rule
   * (annotation/labelling/schema.py, _check_segments) on the values it will be sent. */
  function overlapping(list) {
    const seconds = (value) => Math.round(Number(value) * 100) / 100;
    const found = [];
    list.forEach((segment, index) => {
      if (index && seconds(segment.start) < seconds(list[index - 1].end) - 1e-6) found.push(index);
    });
    return found;
  }

  /* Region labels in rows so that none covers another: each label takes the first row whose last
   * label ends left of it. Run after regions are drawn, and after every zoom or scroll, which move
   * the labels. */
  let labelTimer = 0;
  function layoutLabels() {
    clearTimeout(labelTimer);
    labelTimer = setTimeout(() => {
      if (!state.regions) return;
      const rows = [];
      state.regions.getRegions().slice().sort((a, b) => a.start - b.start).forEach((region) => {
        const label = region.content;
        if (!label) return;
        const box = label.getBoundingClientRect(); // only its left and right: top is ours
        let row = rows.findIndex((right) => right + 4 <= box.left);
        if (row === -1) { row = rows.length; rows.push(0); }
        rows[row] = box.right;
        label.style.top = 2 + row * LABEL_ROW_PX + "px";
      });
      if (panel) panel.dataset.labelRows = String(rows.length);
    }, 30);
  }
  const NUDGE_SECONDS = 0.05;

  /* A segment drawn or dragged with the mouse lands on the nearest word boundaries
   * (static/js/word_ruler.js), unless that would leave it empty; typed times and keyboard nudges
   * are deliberate and stay as they are. */
  function snapToWords(region) {
    if (!state.words) return;
    const start = state.words.snap(region.start), end = state.words.snap(region.end);
    if (end > start && (start !== region.start || end !== region.end)) region.setOptions({ start: start, end: end });
  }

  const segments = {
    table: document.querySelector("table[data-segments]"),
    list: [],
    active: -1,

    init() {
      if (!this.table || !form) return;
      this.emotions = this.table.dataset.emotions.split(",");
      this.editable = panel && panel.dataset.segmentsEditable === "true";
      this.reload();
      const add = document.querySelector("[data-action=add-segment]");
      if (add) add.addEventListener("click", () => this.addAtPlayhead());
      if (state.regions && this.editable) {
        state.regions.enableDragSelection({ color: REGION_COLOUR });
        state.regions.on("region-created", (region) => {
          if (this.restoring) return;
          snapToWords(region);
          this.list.push({ start: region.start, end: region.end, emotion: "", words: "", regionId: region.id });
          this.save();
          this.select(this.list.findIndex((s) => s.regionId === region.id));
        });
        state.regions.on("region-updated", (region) => {
          snapToWords(region);
          const segment = this.list.find((s) => s.regionId === region.id);
          // Drawn again, so the handles' values and the segment numbers follow the drag.
          if (segment) { segment.start = region.start; segment.end = region.end; this.save(); this.restoreRegions(); }
        });
        state.regions.on("region-clicked", (region) => {
          this.select(this.list.findIndex((s) => s.regionId === region.id));
        });
      }
    },

    /* Read the list again from the hidden field (on load, and after undo/redo or a restore). */
    reload() {
      if (!this.table) return;
      this.list = JSON.parse(field("p_emotion_segments").value || "[]");
      if (this.active >= this.list.length) this.active = this.list.length - 1;
      this.render();
      this.restoreRegions();
    },

    restoreRegions() {
      if (!this.table || !state.regions || !panel || panel.dataset.ready !== "true") return;
      this.restoring = true;
      state.regions.clearRegions();
      const overlaps = overlapping(this.list);
      this.list.forEach((segment, index) => {
        const label = document.createElement("span");
        label.className = "region-label";
        label.textContent = `${index + 1} ${segment.emotion || "?"}`;
        Object.assign(label.style, {
          position: "absolute", left: "1px", top: "2px", zIndex: "3", padding: "0 .3em", font: "12px system-ui, sans-serif", lineHeight: "16px",
          background: "rgba(255, 255, 255, 0.92)", borderRadius: "3px", whiteSpace: "nowrap",
        });
        const colour = overlaps.includes(index) ? OVERLAP_COLOUR : index === this.active ? ACTIVE_COLOUR : REGION_COLOUR;
        const region = state.regions.addRegion({
          start: segment.start, end: segment.end, color: colour,
          drag: !!this.editable, resize: !!this.editable, content: label,
        });
        segment.regionId = region.id;
        this.nameRegion(region, index);
      });
      this.restoring = false;
      layoutLabels();
    },

    /* A name for a segment's region and, when it can be edited, sliders on its two handles that
     * Tab reaches and the arrow keys move (NUDGE_SECONDS a press, ten times that with Page Up and
     * Page Down). The handles live in wavesurfer's shadow root, which is open, so they carry
     * their ARIA there; a region scrolled out of a zoomed view is taken out of the DOM by the
     * plugin, and the segment table's start and end fields stay the way in. */
    nameRegion(region, index) {
      const element = region.element;
      const segment = this.list[index];
      if (!element) return;
      const at = (seconds) => `${Number(seconds).toFixed(2)} s`;
      element.setAttribute("role", "group");
      element.setAttribute("aria-label", `Segment ${index + 1}, ${segment.emotion || "no emotion yet"}, ${at(segment.start)} to ${at(segment.end)}`);
      if (!this.editable) return;
      const duration = state.ws ? state.ws.getDuration() : segment.end;
      const edges = { start: ["left", 0, segment.end - NUDGE_SECONDS], end: ["right", segment.start + NUDGE_SECONDS, duration] };
      Object.entries(edges).forEach(([edge, [side, low, high]]) => {
        const handle = element.querySelector(`[part~="region-handle-${side}"]`);
        if (!handle) return;
        const value = segment[edge];
        const attributes = {
          role: "slider", tabindex: "0", "data-edge": edge,
          "aria-label": `${edge === "start" ? "Start" : "End"} of segment ${index + 1}`,
          "aria-valuemin": Math.min(low, value).toFixed(2), "aria-valuemax": Math.max(high, value).toFixed(2),
          "aria-valuenow": Number(value).toFixed(2), "aria-valuetext": at(value),
        };
        Object.entries(attributes).forEach(([name, text]) => handle.setAttribute(name, text));
        handle.addEventListener("keydown", (event) => this.moveHandle(event, index, edge));
      });
    },

    moveHandle(event, index, edge) {
      const steps = { ArrowLeft: -1, ArrowDown: -1, ArrowRight: 1, ArrowUp: 1, PageDown: -10, PageUp: 10 };
      const direction = steps[event.key];
      if (!direction || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
      event.preventDefault();
      event.stopPropagation(); // the waveform's own arrows move the playhead
      this.active = index;
      this.nudge(edge, direction);
      // The regions were drawn again; the plugin puts them into the DOM on its next tick.
      const regionId = this.list[this.active].regionId;
      setTimeout(() => {
        const region = state.regions.getRegions().find((r) => r.id === regionId);
        const handle = region && region.element && region.element.querySelector(`[data-edge=${edge}]`);
        if (handle) handle.focus();
      }, 0);
    },

    select(index) {
      if (!this.list.length) { this.active = -1; return; }
      this.active = ((index % this.list.length) + this.list.length) % this.list.length;
      this.render();
      this.restoreRegions();
      const row = this.table.querySelectorAll("tbody tr")[this.active];
      if (row) row.scrollIntoView({ block: "nearest" });
      if (state.ws) state.ws.setTime(this.list[this.active].start);
    },

    /* Keyboard: move the selected segment (whole, or one edge) by NUDGE_SECONDS. */
    nudge(edge, direction) {
      const segment = this.list[this.active];
      if (!segment || !this.editable) return;
      const duration = state.ws ? state.ws.getDuration() : Infinity;
      const step = direction * NUDGE_SECONDS;
      if (edge === "both") {
        const length = segment.end - segment.start;
        segment.start = Math.min(Math.max(0, segment.start + step), Math.max(0, duration - length));
        segment.end = segment.start + length;
      } else if (edge === "start") {
        segment.start = Math.min(Math.max(0, segment.start + step), segment.end - NUDGE_SECONDS);
      } else {
        segment.end = Math.max(Math.min(duration, segment.end + step), segment.start + NUDGE_SECONDS);
      }
      const keep = segment;
      this.save();
      this.active = this.list.indexOf(keep);
      this.render();
      this.restoreRegions();
    },

    label() {
      const row = this.table.querySelectorAll("tbody tr")[this.active];
      const select = row && row.querySelector("[data-key=emotion]");
      if (select) select.focus();
    },

    remove(index) {
      if (index < 0 || index >= this.list.length || !this.editable) return;
      this.list.splice(index, 1);
      if (this.active >= this.list.length) this.active = this.list.length - 1;
      this.save();
      this.restoreRegions();
    },

    addAtPlayhead() {
      const start = this.list.length ? Math.max.apply(null, this.list.map((s) => s.end)) : 0;
      let end = playhead() > start + 0.1 ? playhead() : start + 1.0;
      const duration = state.ws ? state.ws.getDuration() : 0;
      if (duration && end > duration) end = duration;
      if (end <= start) return;
      this.list.push({ start: start, end: end, emotion: "", words: "" });
      this.active = this.list.length - 1;
      this.save();
      this.restoreRegions();
    },

    /* Write the list into the hidden field; `quiet` keeps the table as it is (typing in it). */
    store() {
      field("p_emotion_segments").value = JSON.stringify(this.list.map((s) => ({
        start: Math.round(s.start * 100) / 100, end: Math.round(s.end * 100) / 100, emotion: s.emotion, words: s.words,
      })));
    },

    /* A segment's words from the word ruler, unless someone typed their own: filled while the
     * field is empty or still holds what the ruler gave it (in this page's memory). */
    fillWords() {
      if (!state.words) return;
      this.list.forEach((s) => {
        if (s.words && s.words !== s.rulerWords) return;
        const words = state.words.between(s.start, s.end);
        if (words !== null) s.words = s.rulerWords = words; // null: its words are not loaded (a long take)
      });
    },

    /* Keyboard: both edges of the selected segment onto their nearest word boundaries. */
    snapActive() {
      const segment = this.list[this.active];
      if (!segment || !this.editable || !state.words) return;
      const start = state.words.nearest(segment.start), end = state.words.nearest(segment.end);
      if (end <= start) return;
      segment.start = start;
      segment.end = end;
      this.save();
      this.restoreRegions();
    },

    save() {
      const active = this.list[this.active];
      this.fillWords();
      this.list.sort((a, b) => a.start - b.start);
      if (active) this.active = this.list.indexOf(active);
      this.store();
      this.render();
      changed();
    },

    /* Say which segments overlap while they are edited, not only when submitting. */
    flagOverlaps() {
      const overlaps = overlapping(this.list);
      this.table.querySelectorAll("tbody tr").forEach((row, index) => row.classList.toggle("overlap", overlaps.includes(index)));
      const note = document.querySelector("[data-testid=segment-overlaps]");
      if (!note) return;
      note.hidden = !overlaps.length;
      note.textContent = overlaps.map((index) => `Segment ${index + 1} overlaps the one before it.`).join(" ");
    },

    render() {
      const body = this.table.querySelector("tbody");
      body.innerHTML = "";
      this.list.forEach((segment, index) => {
        const row = document.createElement("tr");
        if (index === this.active) row.classList.add("active");
        const disabled = this.editable ? "" : " disabled";
        row.innerHTML =
          `<td><input type="number" step="0.01" min="0" data-key="start" aria-label="Segment ${index + 1} start"${disabled}></td>` +
          `<td><input type="number" step="0.01" min="0" data-key="end" aria-label="Segment ${index + 1} end"${disabled}></td>` +
          `<td><select data-key="emotion" aria-label="Segment ${index + 1} emotion"${disabled}><option value="">—</option>` +
          this.emotions.map((e) => `<option value="${e}">${e}</option>`).join("") + `</select></td>` +
          `<td><input type="text" data-key="words" aria-label="Segment ${index + 1} words"${disabled}></td>` +
          `<td>${this.editable ? '<button type="button" class="link" data-remove>Remove</button>' : ""}</td>`;
        row.querySelector("[data-key=start]").value = Number(segment.start).toFixed(2);
        row.querySelector("[data-key=end]").value = Number(segment.end).toFixed(2);
        row.querySelector("[data-key=emotion]").value = segment.emotion;
        row.querySelector("[data-key=words]").value = segment.words;
        row.addEventListener("focusin", () => {
          if (this.active !== index) { this.active = index; body.querySelectorAll("tr").forEach((r, i) => r.classList.toggle("active", i === index)); this.restoreRegions(); }
        });
        row.querySelectorAll("[data-key]").forEach((input) => {
          const read = () => {
            const key = input.dataset.key;
            segment[key] = key === "start" || key === "end" ? parseFloat(input.value) || 0 : input.value;
          };
          // Every keystroke reaches the hidden field (and so autosave and the browser's copy) and the
          // regions; the table is redrawn when the field is left, not under the typing hand.
          input.addEventListener("input", (event) => {
            event.stopPropagation();
            read();
            this.store();
            this.flagOverlaps();
            this.restoreRegions(); // the regions follow the typed times (the table stays as it is)
            changed();
          });
          input.addEventListener("change", () => {
            read();
            this.save();
            this.restoreRegions();
          });
        });
        const remove = row.querySelector("[data-remove]");
        if (remove) remove.addEventListener("click", () => this.remove(index));
        body.appendChild(row);
      });
      this.flagOverlaps();
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
  /* One table: each row's keys and hint are what the page lists (EchoKeys.list), and its `on`
   * and `run` are what the key does, so the list cannot say one thing and the key do another.
   * Every row acts whatever has focus, except inside a text field (and a select, whose own keys
   * pick from it); Ctrl rows act there too. A choice made with a key leaves focus on the page
   * (EchoKeys.release), never on a radio group or select the next arrow or letter would change.
   * A focused checkbox, radio or button keeps its own Space. */

  function choose(name, index) {
    const radios = form.querySelectorAll(`input[type=radio][name="${name}"]`);
    const radio = radios[index];
    if (radio && !radio.disabled) {
      radio.checked = true;
      radio.dispatchEvent(new Event("input", { bubbles: true }));
    }
    EchoKeys.release();
  }

  /* One step along a scale of radios (intensity): up from the checked one, or from the start. */
  function step(name, direction) {
    const radios = Array.from(form.querySelectorAll(`input[type=radio][name="${name}"]`));
    const current = radios.findIndex((radio) => radio.checked);
    const next = current === -1 ? (direction > 0 ? 0 : radios.length - 1) : current + direction;
    choose(name, Math.min(Math.max(next, 0), radios.length - 1));
  }

  const plain = (event) => !event.ctrlKey && !event.metaKey && !event.altKey;
  const digitOf = (event) => { const d = /^Digit([1-9])$/.exec(event.code); return d ? Number(d[1]) : 0; };
  const arrow = (event) => event.key === "ArrowLeft" || event.key === "ArrowRight";
  const back = (event) => (event.key === "ArrowLeft" ? -1 : 1);
  const hasSegments = () => Boolean(segments.table);
  const editable = () => Boolean(segments.table && segments.editable);
  const selected = () => Boolean(segments.table && segments.active >= 0);
  /* A radio group with no keys of its own (conflict kind, a strategy): its arrows choose in it. */
  const radioWithoutKeys = (target) => target.matches("input[type=radio]") && !/^p_(emotion|polarity|intensity)$/.test(target.name);

  const SHORTCUTS = [
    { keys: "Space", hint: "Play / pause (a focused checkbox or button: tick or press it)",
      on: (e) => e.code === "Space" && plain(e) && !EchoKeys.ownsSpace(e.target), run: () => { if (state.ws) state.ws.playPause(); } },
    { keys: "← →", hint: "Back / forward 1 s (on the conflict kind or a strategy: choose in it)",
      on: (e) => arrow(e) && plain(e) && !e.shiftKey && !radioWithoutKeys(e.target),
      run: (e) => { if (state.ws) state.ws.setTime(Math.max(0, playhead() + back(e))); } },
    { keys: "[ ]", hint: "Slower / faster playback", on: (e) => (e.key === "[" || e.key === "]") && plain(e),
      run: (e) => EchoWaveform.stepSpeed(document.querySelector("[data-role=speed]"), e.key === "[" ? -1 : 1) },
    { keys: "1 – 7", hint: "Primary emotion: happy, sad, angry, surprise, disgust, fear, neutral",
      on: (e) => digitOf(e) && plain(e) && !e.shiftKey, run: (e) => choose("p_emotion", digitOf(e) - 1) },
    { keys: "Shift+1 – 4", hint: "Polarity: positive, negative, neutral, mixed",
      on: (e) => digitOf(e) && plain(e) && e.shiftKey, run: (e) => choose("p_polarity", digitOf(e) - 1) },
    { keys: "Alt+1 – 3", hint: "Intensity: low, medium, high",
      on: (e) => digitOf(e) && e.altKey && !e.ctrlKey && !e.metaKey, run: (e) => choose("p_intensity", digitOf(e) - 1) },
    // Intensity's own key where Alt+digit cannot be had: with shortcuts that need Alt, Alt+2 is the
    // 2 key (an emotion), so Alt+I steps intensity up and Alt+Shift+I down.
    { keys: "i, Shift+I", hint: "Intensity one step up / down", on: (e) => (e.key === "i" || e.key === "I") && plain(e),
      run: (e) => step("p_intensity", e.key === "I" ? -1 : 1) },
    { keys: "+ −, wheel", hint: "Zoom the waveform in / out", on: (e) => plain(e) && Boolean(EchoWaveform.zoomKey(e)),
      run: (e) => { if (state.ws) EchoWaveform.zoomBy(state.ws, panel.querySelector(".waveform"), EchoWaveform.zoomKey(e)); } },
    { keys: "g", hint: "Add an emotion segment at the playhead", when: editable,
      on: (e) => e.key === "g" && plain(e) && editable(), run: () => { segments.addAtPlayhead(); EchoKeys.release(); } },
    { keys: "s, Shift+S", hint: "Select the next / previous segment", when: hasSegments,
      on: (e) => (e.key === "s" || e.key === "S") && plain(e) && hasSegments(),
      run: (e) => { segments.select(segments.active + (e.key === "S" ? -1 : 1)); EchoKeys.release(); } },
    { keys: ", .", hint: "Move the selected segment earlier / later", when: editable,
      on: (e) => (e.key === "," || e.key === ".") && plain(e) && selected(), run: (e) => segments.nudge("both", e.key === "," ? -1 : 1) },
    { keys: "< >", hint: "Move its start earlier / later", when: editable,
      on: (e) => (e.key === "<" || e.key === ">") && plain(e) && selected(), run: (e) => segments.nudge("start", e.key === "<" ? -1 : 1) },
    { keys: "Shift+← →", hint: "Move its end earlier / later", when: editable,
      on: (e) => arrow(e) && plain(e) && e.shiftKey && selected(), run: (e) => segments.nudge("end", back(e)) },
    { keys: "w", hint: "Snap the selected segment's edges to the nearest word boundaries", when: editable,
      on: (e) => e.key === "w" && plain(e) && selected(), run: () => segments.snapActive() },
    { keys: "l", hint: "Label the selected segment (focus its emotion list; Esc leaves it)", when: hasSegments,
      on: (e) => e.key === "l" && plain(e) && selected(), run: () => segments.label() },
    { keys: "Delete", hint: "Remove the selected segment", when: editable,
      on: (e) => (e.key === "Delete" || e.key === "Backspace") && plain(e) && selected() && !e.target.matches("button"),
      run: () => segments.remove(segments.active) },
    { keys: "Ctrl+Z", hint: "Undo a label or segment change", ctrl: true,
      on: (e) => (e.ctrlKey || e.metaKey) && !e.altKey && e.key.toLowerCase() === "z" && !e.shiftKey,
      run: () => window.EchoWorkbench.undo && window.EchoWorkbench.undo() },
    { keys: "Ctrl+Shift+Z", hint: "Redo", ctrl: true,
      on: (e) => (e.ctrlKey || e.metaKey) && !e.altKey && (e.key.toLowerCase() === "y" || (e.key.toLowerCase() === "z" && e.shiftKey)),
      run: () => window.EchoWorkbench.redo && window.EchoWorkbench.redo() },
    { keys: "Ctrl+S", hint: "Save now", ctrl: true, anywhere: true,
      on: (e) => (e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "s", run: () => { if (window.htmx) htmx.trigger(form, "save-now"); } },
    { keys: "Ctrl+Enter", hint: "Submit", ctrl: true, anywhere: true,
      on: (e) => (e.ctrlKey || e.metaKey) && e.key === "Enter", run: () => form.requestSubmit() },
    { keys: "Esc", hint: "Leave whatever has focus (a text box, a list), so the keys above work again", on: () => false, run: () => {} },
  ];

  function initShortcuts() {
    if (!form || !form.hasAttribute("data-shortcuts")) return;
    EchoKeys.list(document.querySelector("[data-shortcut-list]"), SHORTCUTS);
    EchoKeys.bind((event) => {
      // Inside a text box the browser undoes that box's typing, as people expect there.
      const typing = EchoKeys.typing(event.target);
      const row = SHORTCUTS.find((r) => (!typing || r.anywhere) && r.on(event));
      if (!row) return;
      event.preventDefault();
      row.run(event);
    });
  }

  initWaveform();
  initWordPickers();
  segments.init();
  initCopyButtons();
  initShortcuts();

  // For static/js/workbench_keep.js (undo/redo, autosave refusals, the browser's copy).
  window.EchoWorkbench = { form: form, refresh: refreshFromFields, changed: changed };
})();
