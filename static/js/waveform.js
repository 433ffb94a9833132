/* One home for every waveform of the studio (workbench, adjudication, review, take page, recorder):
 * the colours (read from the CSS custom properties in studio.css, so pitch and energy look the
 * same on every page), a height that fits the screen, zoom with the mouse wheel and the +/- keys,
 * playback speed remembered per user (localStorage), and pitch/energy contours drawn over the
 * part of the waveform that is in view, so they stay aligned when zoomed and scrolled; a time
 * ruler under it and the zoom level in words; a name ("Waveform of the take under review, 3.2 s"),
 * focus and its own keys while focused (Space, arrows, Home, End, + and −), and Play / pause
 * buttons that say whether they are playing.
 * Uses the vendored wavesurfer.js 7. Exposes window.EchoWaveform. */
(function () {
  "use strict";

  const ZOOM_STEP = 1.6;
  const MAX_PX_PER_SEC = 2000;
  const SPEEDS = [0.5, 0.75, 1, 1.25, 1.5, 2];

  function cssColour(name, fallback) {
    const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }

  const colours = {
    get pitch() { return cssColour("--pitch", "#2f5bd3"); },
    get energy() { return cssColour("--energy", "#d9822b"); },
    get wave() { return cssColour("--wave", "#a9b4c8"); },
    get progress() { return cssColour("--wave-progress", "#5b6477"); },
    get cursor() { return cssColour("--ink", "#1d2433"); },
  };

  /* A height that fits the screen: a quarter of the window, between 120 and 280 pixels. */
  function fittingHeight() {
    return Math.round(Math.max(120, Math.min(280, window.innerHeight * 0.25)));
  }

  /* --- Speed, remembered per user ---------------------------------------------------------- */

  function speedKey() {
    return "echostudio.speed." + (document.body.dataset.user || "anonymous");
  }

  function savedSpeed() {
    try {
      const value = parseFloat(window.localStorage.getItem(speedKey()) || "");
      return SPEEDS.includes(value) ? value : 1;
    } catch (error) {
      return 1; // storage refused (private mode): normal speed
    }
  }

  function rememberSpeed(value) {
    try { window.localStorage.setItem(speedKey(), String(value)); } catch (error) { /* not kept */ }
  }

  /* Wire a <select> of speeds to the player: restored from the user's last choice, kept on change. */
  function bindSpeed(ws, select) {
    if (!select) return;
    const initial = savedSpeed();
    select.value = String(initial);
    if (select.value !== String(initial)) select.value = "1";
    ws.setPlaybackRate(parseFloat(select.value), true);
    select.addEventListener("change", function () {
      const value = parseFloat(select.value);
      ws.setPlaybackRate(value, true);
      rememberSpeed(value);
    });
  }

  /* One step slower or faster on a speed <select> (the [ and ] keys). */
  function stepSpeed(select, direction) {
    if (!select) return;
    const next = select.selectedIndex + direction;
    if (next >= 0 && next < select.options.length) {
      select.selectedIndex = next;
      select.dispatchEvent(new Event("change"));
    }
  }

  /* --- Zoom --------------------------------------------------------------------------------- */

  function fitPxPerSec(ws, container) {
    const duration = ws.getDuration() || 1;
    return container.clientWidth / duration;
  }

  /* Zoom in (direction 1) or out (-1) around the view; fully out is "fit the whole take". */
  function zoomBy(ws, container, direction) {
    if (!ws.getDuration()) return;
    const fit = fitPxPerSec(ws, container);
    const current = parseFloat(container.dataset.zoom || "0") || fit;
    let next = direction > 0 ? current * ZOOM_STEP : current / ZOOM_STEP;
    next = Math.min(MAX_PX_PER_SEC, next);
    if (next <= fit * 1.01) next = 0; // back to the whole take
    container.dataset.zoom = String(next ? Math.round(next) : 0);
    ws.zoom(next);
    if (next) ws.setScrollTime(Math.max(0, ws.getCurrentTime() - (container.clientWidth / next) / 2));
  }

  function bindZoom(ws, container) {
    container.dataset.zoom = "0";
    container.addEventListener("wheel", function (event) {
      if (!event.deltaY || Math.abs(event.deltaX) > Math.abs(event.deltaY)) return; // sideways: scroll
      event.preventDefault();
      zoomBy(ws, container, event.deltaY < 0 ? 1 : -1);
    }, { passive: false });
  }

  /* Is the key a zoom key (+, =, -)? Returns 1, -1 or 0. */
  function zoomKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return 0;
    if (event.key === "+" || event.key === "=") return 1;
    if (event.key === "-" || event.key === "_") return -1;
    return 0;
  }

  /* --- Contours ------------------------------------------------------------------------------ */

  /* Contours come in two shapes: [[t, v], ...] per name (workbench), or {times, hz|db} with null
   * for unvoiced frames (take page). Both become lists of [t, v | null]. */
  function contourPoints(contours, name) {
    if (!contours) return [];
    if (Array.isArray(contours[name])) return contours[name];
    const source = name === "pitch" ? contours.pitch : contours.intensity;
    const values = source && (name === "pitch" ? source.hz : source.db);
    if (!source || !values) return [];
    return source.times.map(function (t, i) { return [t, values[i]]; });
  }

  function visibleRange(ws, container) {
    const duration = ws.getDuration() || 1;
    const wrapper = ws.getWrapper();
    const total = Math.max(wrapper.scrollWidth, container.clientWidth) || 1;
    const left = ws.getScroll();
    return [(left / total) * duration, ((left + container.clientWidth) / total) * duration];
  }

  /* The range a contour is scaled to: its 2nd to 98th percentile, so one stray frame (a pitch
   * tracker's octave jump on the last syllable) does not flatten the rest into a line; values
   * outside are drawn at the edge. */
  function robustRange(values) {
    const sorted = values.slice().sort(function (a, b) { return a - b; });
    const at = function (share) { return sorted[Math.round(share * (sorted.length - 1))]; };
    return sorted.length >= 20 ? [at(0.02), at(0.98)] : [sorted[0], sorted[sorted.length - 1]];
  }

  /* Draw pitch and energy over the waveform's visible part. `energySpanDb`: only the top of the
   * energy range is shown (pauses read near 0 dB and would flatten the speech's own movement). */
  function drawContours(ws, container, canvas, contours, energySpanDb) {
    if (!canvas || !ws.getDuration()) return null;
    const ratio = window.devicePixelRatio || 1;
    const width = container.clientWidth, height = container.clientHeight;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    canvas.style.width = width + "px";
    canvas.style.height = height + "px";
    // Over the waveform box exactly, wherever the page put it inside their common parent.
    canvas.style.left = container.offsetLeft + "px";
    canvas.style.top = container.offsetTop + "px";
    const context = canvas.getContext("2d");
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    context.clearRect(0, 0, width, height);
    const range = visibleRange(ws, container);
    const span = range[1] - range[0] || 1;
    const extents = {};
    [["energy", colours.energy], ["pitch", colours.pitch]].forEach(function (pair) {
      const points = contourPoints(contours, pair[0]);
      const known = points.filter(function (p) { return p[1] !== null && p[1] !== undefined; });
      if (known.length < 2) return;
      const extent = robustRange(known.map(function (p) { return p[1]; }));
      let low = extent[0];
      const high = extent[1];
      if (pair[0] === "energy" && energySpanDb) low = Math.max(low, high - energySpanDb);
      extents[pair[0]] = [low, high];
      const valueSpan = high - low || 1;
      // Unvoiced frames are null or missing: a step well above the usual one is a gap, left open.
      const steps = known.slice(1).map(function (p, i) { return p[0] - known[i][0]; }).sort(function (a, b) { return a - b; });
      const gap = 2.5 * steps[Math.floor(steps.length / 2)];
      context.beginPath();
      let previous = null;
      points.forEach(function (p) {
        if (p[1] === null || p[1] === undefined) { previous = null; return; }
        const x = ((p[0] - range[0]) / span) * width;
        const share = Math.min(1, Math.max(0, (p[1] - low) / valueSpan));
        const y = height - 6 - share * (height - 12);
        if (previous === null || p[0] - previous > gap) context.moveTo(x, y); else context.lineTo(x, y);
        previous = p[0];
      });
      // Told apart by more than colour (WCAG 1.4.1): energy dashed, pitch solid, as in the
      // legend's samples; a white halo under each line keeps 3:1 over the waveform (1.4.11).
      context.setLineDash(pair[0] === "energy" ? [6, 4] : []);
      context.strokeStyle = "rgba(255, 255, 255, 0.9)";
      context.lineWidth = 4;
      context.stroke();
      context.strokeStyle = pair[1];
      context.lineWidth = 2;
      context.stroke();
    });
    context.setLineDash([]);
    return extents;
  }

  /* --- Time ruler and zoom level (under the waveform; a word ruler may follow it) ------------ */

  const TICK_STEPS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60];
  const MIN_TICK_PX = 64;

  function addScale(container) {
    const scale = document.createElement("div");
    scale.className = "waveform-scale";
    const ruler = document.createElement("canvas");
    ruler.className = "waveform-ruler";
    ruler.setAttribute("aria-hidden", "true");
    const level = document.createElement("span");
    level.className = "zoom-level";
    level.setAttribute("data-testid", "zoom-level");
    scale.appendChild(ruler);
    scale.appendChild(level);
    container.insertAdjacentElement("afterend", scale);
    return { ruler: ruler, level: level };
  }

  function drawScale(ws, container, scale) {
    const duration = ws.getDuration();
    if (!duration) return;
    const range = visibleRange(ws, container);
    const span = range[1] - range[0] || 1;
    const width = container.clientWidth, height = 22;
    const ratio = window.devicePixelRatio || 1;
    const canvas = scale.ruler;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    canvas.style.width = width + "px";
    canvas.style.height = height + "px";
    const context = canvas.getContext("2d");
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    context.clearRect(0, 0, width, height);
    const step = TICK_STEPS.find(function (s) { return (s / span) * width >= MIN_TICK_PX; }) || 60;
    const decimals = step < 0.1 ? 2 : step < 1 ? 1 : 0;
    context.fillStyle = context.strokeStyle = cssColour("--muted", "#5b6477");
    context.font = "11px system-ui, sans-serif";
    context.beginPath();
    for (let t = Math.ceil(range[0] / step) * step; t <= range[1] + 1e-9; t += step) {
      const x = Math.round(((t - range[0]) / span) * width) + 0.5;
      context.moveTo(x, 0);
      context.lineTo(x, 6);
      const label = t.toFixed(decimals) + " s";
      const textWidth = context.measureText(label).width;
      context.fillText(label, Math.min(Math.max(0, x - textWidth / 2), width - textWidth), 18);
    }
    context.stroke();
    const zoom = parseFloat(container.dataset.zoom || "0");
    const factor = zoom ? zoom / fitPxPerSec(ws, container) : 1;
    container.dataset.zoomFactor = factor.toFixed(1);
    scale.level.textContent = zoom
      ? "zoom ×" + factor.toFixed(1) + " · " + span.toFixed(2) + " of " + duration.toFixed(2) + " s in view"
      : "whole take · " + duration.toFixed(2) + " s";
  }

  /* --- Name, focus and keys (WCAG 2.1.1, 2.4.7, 4.1.2) ----------------------------------------- */

  const SEEK_SECONDS = 1;
  // The character keys a focused waveform answers. static/js/shortcuts.js lets them through
  // whatever the person's shortcut setting: WCAG 2.1.4 exempts keys that act only while their
  // component has focus.
  const FOCUS_KEYS = " +=-_";
  let describedCount = 0;

  function seek(ws, seconds) {
    const time = Math.max(0, Math.min(ws.getDuration() || 0, seconds));
    ws.setTime(time);
    ws.emit("interaction", time); // as a click would: the review page undoes a jump past what was heard
  }

  /* The waveform as one focusable control named for what it plays, its keys described to a
   * screen reader; role "application" so a screen reader hands it Space and the arrows. */
  function makeAccessible(ws, container, subject) {
    const name = "Waveform of " + subject;
    container.setAttribute("role", "application");
    container.setAttribute("aria-roledescription", "waveform");
    container.setAttribute("aria-label", name);
    container.tabIndex = 0;
    container.dataset.focusKeys = FOCUS_KEYS;
    if (!container.hasAttribute("aria-describedby")) { // the recorder makes a new waveform per take
      const keys = document.createElement("span");
      keys.id = "waveform-keys-" + (++describedCount);
      keys.className = "sr-only";
      keys.textContent = "Space plays or pauses; the arrow keys move the playhead 1 s, Home and End to the start and end; + and − zoom.";
      container.insertAdjacentElement("beforebegin", keys); // not after: the time ruler follows the waveform
      container.setAttribute("aria-describedby", keys.id);
    }
    // wavesurfer plays through an <audio> of its own (in its shadow root) unless given one.
    const media = ws.getMediaElement();
    if (media && !media.hasAttribute("aria-label")) media.setAttribute("aria-label", "Audio of " + subject);
    ws.on("ready", function (duration) { container.setAttribute("aria-label", name + ", " + duration.toFixed(1) + " s"); });
    const answer = function (event) {
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      const zoom = zoomKey(event);
      if (zoom) zoomBy(ws, container, zoom);
      else if (event.shiftKey) return; // Shift+arrows stay the page's (the workbench moves a segment's end)
      else if (event.key === " ") ws.playPause();
      else if (event.key === "ArrowLeft" || event.key === "ArrowRight") seek(ws, ws.getCurrentTime() + (event.key === "ArrowLeft" ? -SEEK_SECONDS : SEEK_SECONDS));
      else if (event.key === "Home") seek(ws, 0);
      else if (event.key === "End") seek(ws, ws.getDuration());
      else return;
      event.preventDefault();
      event.stopPropagation(); // the page's own Space and arrows would act a second time
    };
    container.addEventListener("keydown", answer);
    ws.on("destroy", function () { container.removeEventListener("keydown", answer); });
  }

  /* A Play / pause button: it toggles the player and says whether it is playing (aria-pressed). */
  function bindPlayButton(ws, button) {
    if (!button) return;
    button.setAttribute("aria-pressed", "false");
    button.addEventListener("click", function () { ws.playPause(); });
    ["play", "pause", "finish"].forEach(function (name) {
      ws.on(name, function () { button.setAttribute("aria-pressed", String(name === "play")); });
    });
  }

  /* --- Peaks made by the take's analysis ------------------------------------------------------ */

  /* The page's precomputed peaks (annotation/audio/peaks.py: 8-bit min/max pairs per pixel and the
   * take's duration, in a json_script "waveform-peaks"), or null when the page has none: the
   * waveform then downloads and decodes the audio as before. */
  function pagePeaks(node) {
    if (!node) return null;
    try {
      const peaks = JSON.parse(node.textContent || "null");
      if (!peaks || !Array.isArray(peaks.data) || !peaks.data.length || !(peaks.duration > 0)) return null;
      const scale = Math.pow(2, (peaks.bits || 8) - 1);
      return { duration: peaks.duration, channel: Float32Array.from(peaks.data, function (v) { return v / scale; }) };
    } catch (error) {
      return null; // unreadable peaks: the audio is decoded instead
    }
  }

  /* --- A long take's contours and words, per window (issue 46) ------------------------------ */

  /* Ask `url` (?start=&end= seconds) for the contours and words of the part in view and as much
   * again on each side, when the view leaves what was loaded or zooms in past its detail (a
   * window over three times the view's span); the answer replaces `options.contours` and goes to
   * `options.onWindow(data)`. The container counts its requests (data-window-requests) and says
   * the window it holds (data-window), for the tests and bench/long_audio.py. */
  function bindWindows(ws, container, options) {
    let loaded = null;
    let pending = "";
    let timer = 0;
    container.dataset.windowRequests = "0";
    const want = function () {
      const duration = ws.getDuration();
      if (!duration) return;
      const range = visibleRange(ws, container);
      const span = Math.max(0.01, range[1] - range[0]);
      if (loaded && range[0] >= loaded.start - 0.01 && range[1] <= loaded.end + 0.01
          && loaded.end - loaded.start <= 3.01 * span) return;
      const start = Math.max(0, range[0] - span), end = Math.min(duration, range[1] + span);
      const key = start.toFixed(3) + "-" + end.toFixed(3);
      if (key === pending) return;
      pending = key;
      container.dataset.windowRequests = String(parseInt(container.dataset.windowRequests, 10) + 1);
      const url = options.windowUrl + (options.windowUrl.includes("?") ? "&" : "?")
        + "start=" + start.toFixed(3) + "&end=" + end.toFixed(3);
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (response) { return response.ok ? response.json() : Promise.reject(response.status); })
        .then(function (data) {
          if (key !== pending) return; // a newer window was asked for meanwhile
          pending = "";
          loaded = { start: data.start, end: data.end };
          options.contours = { pitch: data.pitch, energy: data.energy };
          container.dataset.window = data.start.toFixed(2) + "-" + data.end.toFixed(2);
          ws.emit("contours");
          if (options.onWindow) options.onWindow(data);
        })
        .catch(function () { pending = ""; }); // asked again on the next scroll or zoom
    };
    const schedule = function () { clearTimeout(timer); timer = setTimeout(want, 120); };
    ["ready", "zoom", "scroll", "redrawcomplete"].forEach(function (name) { ws.on(name, schedule); });
  }

  /* --- Creating a waveform --------------------------------------------------------------------- */

  /* options: container (element), subject (what it plays: "the take under review"), url or media,
   * peaksNode (json_script of the take's peaks; default: #waveform-peaks when a url is given),
   * plugins, height, contours + canvas (+ energySpanDb), speedSelect, onContours(extents);
   * windowUrl + onWindow(data) for a long take, whose contours and words load per window.
   * Returns the WaveSurfer instance, zoom bound to the wheel, named and answering its keys. */
  function create(options) {
    const container = options.container;
    const settings = {
      container: container,
      height: options.height || fittingHeight(),
      waveColor: colours.wave,
      progressColor: colours.progress,
      cursorColor: colours.cursor,
      plugins: options.plugins || [],
      autoCenter: true,
    };
    if (options.url) settings.url = options.url;
    if (options.media) settings.media = options.media;
    const peaks = options.url && !options.media
      ? pagePeaks(options.peaksNode || document.getElementById("waveform-peaks")) : null;
    if (peaks) {
      // Drawn from the peaks at once; the audio streams by range requests only as it is played:
      // metadata first, the rest as the media element asks for it (webapp/storage.py answers ranges).
      settings.peaks = [peaks.channel];
      settings.duration = peaks.duration;
      container.dataset.peaks = "true";
    }
    const ws = window.WaveSurfer.create(settings);
    // Set before wavesurfer gives the element its src (a microtask later).
    if (peaks) ws.getMediaElement().preload = "metadata";
    // When the waveform was first drawn (ms since navigation): what bench/long_audio.py times.
    ws.once("redrawcomplete", function () { container.dataset.drawnAt = String(Math.round(performance.now())); });
    bindZoom(ws, container);
    bindSpeed(ws, options.speedSelect);
    makeAccessible(ws, container, options.subject || "the recording");
    if (options.canvas) {
      let frame = 0;
      const redraw = function () {
        cancelAnimationFrame(frame);
        frame = requestAnimationFrame(function () {
          const extents = drawContours(ws, container, options.canvas, options.contours, options.energySpanDb);
          if (extents && options.onContours) options.onContours(extents);
        });
      };
      ["ready", "zoom", "scroll", "redrawcomplete", "contours"].forEach(function (name) { ws.on(name, redraw); });
      window.addEventListener("resize", redraw);
    }
    if (options.windowUrl) bindWindows(ws, container, options);
    const scale = addScale(container);
    let scaleFrame = 0;
    const redrawScale = function () {
      cancelAnimationFrame(scaleFrame);
      scaleFrame = requestAnimationFrame(function () { drawScale(ws, container, scale); });
    };
    ["ready", "zoom", "scroll", "redrawcomplete"].forEach(function (name) { ws.on(name, redrawScale); });
    window.addEventListener("resize", redrawScale);
    ws.on("destroy", function () { // the recorder makes a new waveform per take
      window.removeEventListener("resize", redrawScale);
      scale.ruler.parentNode.remove();
    });
    ws.on("ready", function () { container.dataset.ready = "true"; });
    return ws;
  }

  window.EchoWaveform = {
    colours: colours,
    create: create,
    bindPlayButton: bindPlayButton,
    zoomBy: zoomBy,
    zoomKey: zoomKey,
    stepSpeed: stepSpeed,
    fittingHeight: fittingHeight,
  };
})();
