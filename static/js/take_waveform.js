// A take's waveform with its pitch and energy contours drawn over it (static/js/waveform.js: the
// same colours, zoom and speed memory as every other waveform of the studio).
(function () {
  "use strict";
  const view = document.getElementById("take-view");
  if (!view) return;
  const container = document.getElementById("waveform");
  const rangeNote = document.getElementById("contour-range");
  const dataNode = document.getElementById("take-contours");
  const contours = dataNode ? JSON.parse(dataNode.textContent) : null;

  const player = EchoWaveform.create({
    container: container,
    subject: "this take",
    url: view.dataset.audioUrl,
    height: Math.max(180, EchoWaveform.fittingHeight()),
    canvas: contours ? document.getElementById("contours") : null,
    contours: contours,
    // Pauses read near 0 dB; showing only the top 50 dB keeps the speech's own movement visible.
    energySpanDb: 50,
    onContours: function (extents) {
      const parts = [];
      if (extents.pitch) parts.push("pitch " + Math.round(extents.pitch[0]) + "–" + Math.round(extents.pitch[1]) + " Hz");
      if (extents.energy) parts.push("energy " + Math.round(extents.energy[0]) + "–" + Math.round(extents.energy[1]) + " dB");
      rangeNote.textContent = parts.length ? "(" + parts.join(", ") + ", bottom to top)" : "(no voiced frames)";
      view.dataset.contoursDrawn = "true";
    },
  });
  EchoWaveform.bindPlayButton(player, document.getElementById("play-toggle"));
  document.addEventListener("keydown", function (event) {
    if (event.target.matches("input, textarea, select")) return;
    const zoom = EchoWaveform.zoomKey(event);
    if (zoom) { event.preventDefault(); EchoWaveform.zoomBy(player, container, zoom); }
  });
})();
