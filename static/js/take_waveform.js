// A take's waveform (wavesurfer.js) with its pitch and energy contours drawn over it on a canvas
// that shares the waveform's time axis: x = time / duration * width.
(function () {
  "use strict";
  const view = document.getElementById("take-view");
  if (!view) return;
  const canvas = document.getElementById("contours");
  const rangeNote = document.getElementById("contour-range");
  const dataNode = document.getElementById("take-contours");
  const contours = dataNode ? JSON.parse(dataNode.textContent) : null;
  const PITCH_COLOUR = "#d35400";
  const ENERGY_COLOUR = "#16a085";
  const ENERGY_SPAN_DB = 50;

  const player = window.WaveSurfer.create({
    container: "#waveform",
    url: view.dataset.audioUrl,
    height: 180,
    waveColor: "#c3ccdf",
    progressColor: "#8aa0d6",
  });
  document.getElementById("play-toggle").addEventListener("click", function () { player.playPause(); });

  function extent(values) {
    const known = values.filter(function (v) { return v !== null; });
    if (!known.length) return null;
    return [Math.min.apply(null, known), Math.max.apply(null, known)];
  }

  // One line per contour; a null value (unvoiced frame) breaks the line instead of bridging it.
  function drawLine(context, times, values, range, duration, colour) {
    const width = canvas.width, height = canvas.height, margin = 8;
    const span = range[1] - range[0] || 1;
    context.strokeStyle = colour;
    context.lineWidth = 2 * (window.devicePixelRatio || 1);
    context.beginPath();
    let drawing = false;
    for (let i = 0; i < times.length; i++) {
      if (values[i] === null) { drawing = false; continue; }
      const x = (times[i] / duration) * width;
      const share = Math.max(0, (values[i] - range[0]) / span);
      const y = height - margin - share * (height - 2 * margin);
      if (drawing) context.lineTo(x, y); else context.moveTo(x, y);
      drawing = true;
    }
    context.stroke();
  }

  function draw() {
    const duration = player.getDuration();
    if (!contours || !duration) return;
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(canvas.clientWidth * ratio);
    canvas.height = Math.round(canvas.clientHeight * ratio);
    const context = canvas.getContext("2d");
    context.clearRect(0, 0, canvas.width, canvas.height);
    const pitchRange = extent(contours.pitch.hz);
    const energyRange = extent(contours.intensity.db);
    // Pauses read near 0 dB; showing only the top 50 dB keeps the speech's own movement visible.
    if (energyRange) energyRange[0] = Math.max(energyRange[0], energyRange[1] - ENERGY_SPAN_DB);
    if (energyRange) drawLine(context, contours.intensity.times, contours.intensity.db, energyRange, duration, ENERGY_COLOUR);
    if (pitchRange) drawLine(context, contours.pitch.times, contours.pitch.hz, pitchRange, duration, PITCH_COLOUR);
    const parts = [];
    if (pitchRange) parts.push("pitch " + Math.round(pitchRange[0]) + "–" + Math.round(pitchRange[1]) + " Hz");
    if (energyRange) parts.push("energy " + Math.round(energyRange[0]) + "–" + Math.round(energyRange[1]) + " dB");
    rangeNote.textContent = parts.length ? "(" + parts.join(", ") + ", bottom to top)" : "(no voiced frames)";
    view.dataset.contoursDrawn = "true";
  }

  player.on("ready", draw);
  window.addEventListener("resize", draw);
})();
