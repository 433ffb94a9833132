// The results chart of a comparison study: CMOS or Bradley–Terry scores as bars with 95% interval
// whiskers, or MUSHRA box plots (quartiles as floating bars, Tukey whiskers, the median as a dash).
// Whiskers come from error_bars.js; the data from evaluation.studies.comparison_reports.comparison_chart.
(function () {
  "use strict";
  const canvas = document.getElementById("comparison-chart");
  const source = document.getElementById("comparison-chart-data");
  if (!canvas || !source || typeof Chart === "undefined") return;
  const data = JSON.parse(source.textContent);
  const errorBars = EchoErrorBars("errorBars");
  const datasets = [];
  if (data.type === "boxes") {
    datasets.push({ type: "bar", label: "Quartiles (box), whiskers 1.5 IQR", data: data.boxes, low: data.low, high: data.high, backgroundColor: "#9fb4ea" });
    datasets.push({ type: "line", label: "Median", data: data.median, showLine: false, pointStyle: "line", pointRadius: 14, borderWidth: 3, borderColor: "#1d2433" });
  } else {
    datasets.push({ type: "bar", label: data.axis, data: data.data, low: data.low, high: data.high, backgroundColor: "#2f5bd3" });
  }
  const y = { title: { display: true, text: data.axis } };
  if (data.min !== null) y.min = data.min;
  if (data.max !== null) y.max = data.max;
  const chart = new Chart(canvas, {
    data: { labels: data.labels, datasets: datasets },
    options: { maintainAspectRatio: false, animation: false, scales: { y: y }, plugins: { legend: { display: data.type === "boxes" } } },
    plugins: [errorBars],
  });
  canvas.dataset.rendered = String(chart.data.labels.length);
})();
