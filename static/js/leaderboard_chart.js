/* The leaderboard's stage-average bar chart (Chart.js 4, vendored). Data: #leaderboard-chart. */
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("leaderboard-chart").textContent);
  const colours = ["#2f5bd3", "#1f8a4c", "#c27c0e", "#7b3fb5"];
  new Chart(document.getElementById("leaderboard-chart-canvas"), {
    type: "bar",
    data: {
      labels: data.labels,
      datasets: data.series.map((series, index) => ({
        label: series.label,
        data: series.data,
        coverage: series.coverage,
        comparable: series.comparable,
        backgroundColor: colours[index % colours.length],
      })),
    },
    options: {
      responsive: true,
      scales: { y: { beginAtZero: true, suggestedMax: 10 } },
      plugins: {
        tooltip: {
          callbacks: {
            // What each bar stands on: n/N judgements, and whether it is ranked at all.
            label(context) {
              const dataset = context.dataset;
              const i = context.dataIndex;
              const value = context.parsed.y === null ? "-" : context.parsed.y.toFixed(2);
              const flag = dataset.comparable[i] ? "" : ", not comparable";
              return `${dataset.label}: ${value} (n/N ${dataset.coverage[i]}${flag})`;
            },
          },
        },
      },
    },
  });
})();
