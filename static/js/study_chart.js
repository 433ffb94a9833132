// The results chart of a listening study: grouped bars (one colour per system, one group per
// dimension) with 95% interval whiskers drawn by a small Chart.js plugin from each dataset's
// `low` and `high` arrays. The tooltip shows what each bar rests on: n/N outputs and its ratings.
(function () {
  "use strict";
  const canvas = document.getElementById("mos-chart");
  const source = document.getElementById("mos-chart-data");
  if (!canvas || !source || typeof Chart === "undefined") return;
  const chartData = JSON.parse(source.textContent);
  const colours = ["#2f5bd3", "#d3812f", "#1f8a4c", "#a23bb0", "#c0392b", "#4a8ca8", "#7a6a2f", "#5b6477"];

  const errorBars = EchoErrorBars("errorBars");

  const chart = new Chart(canvas, {
    type: "bar",
    data: {
      labels: chartData.labels,
      datasets: chartData.datasets.map((dataset, index) => ({
        ...dataset,
        backgroundColor: colours[index % colours.length],
      })),
    },
    options: {
      maintainAspectRatio: false,
      animation: false,
      // Bars grow from 0: with the axis starting at the scale's lowest score (1), a mean of 1.00
      // would be a bar of no height at all, indistinguishable from no ratings.
      scales: {
        y: { min: 0, max: 5, ticks: { stepSize: 1 }, title: { display: true, text: "MOS (1-5), 95% interval" } },
      },
      plugins: {
        tooltip: {
          callbacks: {
            label(context) {
              const dataset = context.dataset;
              const i = context.dataIndex;
              const mean = context.parsed.y;
              const interval =
                dataset.low[i] === null ? "no interval" : `[${dataset.low[i].toFixed(2)}, ${dataset.high[i].toFixed(2)}]`;
              const outputs = `${dataset.coverage[i]} outputs${dataset.comparable[i] ? "" : " (not comparable)"}`;
              return `${dataset.label}: ${mean === null ? "—" : mean.toFixed(2)} ${interval}, n = ${outputs}, ${dataset.n[i]} ratings`;
            },
          },
        },
      },
    },
    plugins: [errorBars],
  });
  canvas.dataset.rendered = String(chart.data.datasets.length);
  canvas.dataset.yMin = String(chart.scales.y.min);
})();
