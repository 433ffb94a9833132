// The per-turn chart of a dialogue study: MOS by assistant turn, one line per system and
// dimension (colour per system, dash per dimension), with 95% interval whiskers at each point.
(function () {
  "use strict";
  const canvas = document.getElementById("turn-chart");
  const source = document.getElementById("turn-chart-data");
  if (!canvas || !source || typeof Chart === "undefined") return;
  const chartData = JSON.parse(source.textContent);
  const colours = ["#2f5bd3", "#d3812f", "#1f8a4c", "#a23bb0", "#c0392b", "#4a8ca8", "#7a6a2f", "#5b6477"];
  const dashes = [[], [6, 3], [2, 3], [8, 3, 2, 3]];
  const systems = [...new Set(chartData.datasets.map((dataset) => dataset.system))];
  const seen = {};

  const whiskers = EchoErrorBars("whiskers");

  const chart = new Chart(canvas, {
    type: "line",
    data: {
      labels: chartData.labels,
      datasets: chartData.datasets.map((dataset) => {
        const colour = colours[systems.indexOf(dataset.system) % colours.length];
        seen[dataset.system] = (seen[dataset.system] || 0) + 1;
        return {
          ...dataset,
          borderColor: colour,
          backgroundColor: colour,
          borderDash: dashes[(seen[dataset.system] - 1) % dashes.length],
          spanGaps: true,
        };
      }),
    },
    options: {
      maintainAspectRatio: false,
      animation: false,
      scales: {
        x: { offset: true },
        y: { min: 1, max: 5, ticks: { stepSize: 1 }, title: { display: true, text: "MOS (1-5), 95% interval" } },
      },
      plugins: {
        tooltip: {
          callbacks: {
            label(context) {
              const dataset = context.dataset;
              const i = context.dataIndex;
              const interval =
                dataset.low[i] === null ? "no interval" : `[${dataset.low[i].toFixed(2)}, ${dataset.high[i].toFixed(2)}]`;
              return `${dataset.label}: ${context.parsed.y.toFixed(2)} ${interval}, n = ${dataset.n[i]} ratings`;
            },
          },
        },
      },
    },
    plugins: [whiskers],
  });
  canvas.dataset.rendered = String(chart.data.datasets.length);
})();
