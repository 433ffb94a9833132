/* Charts of the annotation agreement dashboard (Chart.js 4, vendored). Data: #agreement-data. */
(function () {
  "use strict";
  // The scenario filter applies on change (an inline onchange would break the CSP).
  document.querySelectorAll("select[data-autosubmit]").forEach((select) => {
    select.addEventListener("change", () => select.form.submit());
  });
  const data = JSON.parse(document.getElementById("agreement-data").textContent);
  const palette = ["#2f5bd3", "#d9822b", "#1f8a4c", "#8e44ad", "#c0392b", "#16a085", "#7f8c8d", "#b7950b"];
  const unitScale = { y: { min: 0, max: 1 } };

  function bar(id, labels, datasets, scales) {
    const canvas = document.getElementById(id);
    if (!canvas || !labels.length) return;
    new Chart(canvas, { type: "bar", data: { labels: labels, datasets: datasets }, options: { scales: scales, animation: false } });
  }

  bar("alpha-chart", data.alpha.labels, [{ label: "alpha", data: data.alpha.values, backgroundColor: palette[0] }], { y: { suggestedMin: 0, max: 1 } });
  bar("sets-chart", data.sets.labels, [
    { label: "MASI", data: data.sets.masi, backgroundColor: palette[0] },
    { label: "Jaccard", data: data.sets.jaccard, backgroundColor: palette[1] },
  ], unitScale);
  bar("annotators-chart", data.annotators.labels, [
    { label: "categorical vs gold", data: data.annotators.with_gold, backgroundColor: palette[0] },
    { label: "sets vs gold (MASI)", data: data.annotators.sets_with_gold, backgroundColor: palette[1] },
    { label: "categorical vs peers", data: data.annotators.with_peers, backgroundColor: palette[2] },
  ], unitScale);

  // Dialogue turns: one line per field, alpha at each turn number (null where undefined).
  const turns = document.getElementById("turns-chart");
  if (turns && data.turns && data.turns.labels.length) {
    new Chart(turns, {
      type: "line",
      data: {
        labels: data.turns.labels,
        datasets: data.turns.series.map((series, i) => ({
          label: series.label,
          data: series.values,
          borderColor: palette[i % palette.length],
          backgroundColor: palette[i % palette.length],
          spanGaps: false,
        })),
      },
      options: { scales: { y: { suggestedMin: 0, max: 1 } }, animation: false },
    });
  }

  const weeks = Array.from(new Set(data.drift.map((p) => p.week))).sort();
  const annotators = Array.from(new Set(data.drift.map((p) => p.annotator))).sort();
  const drift = document.getElementById("drift-chart");
  if (drift && weeks.length) {
    new Chart(drift, {
      type: "line",
      data: {
        labels: weeks,
        datasets: annotators.map((name, i) => ({
          label: name,
          borderColor: palette[i % palette.length],
          backgroundColor: palette[i % palette.length],
          spanGaps: true,
          data: weeks.map((week) => {
            const point = data.drift.find((p) => p.week === week && p.annotator === name);
            return point ? point.value : null;
          }),
        })),
      },
      options: { scales: unitScale, animation: false },
    });
  }
})();
