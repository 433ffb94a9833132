/* The leaderboard's stage-average bar chart (Chart.js 4, vendored). Data: #leaderboard-chart. */
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("leaderboard-chart").textContent);
  const colours = ["#2f5bd3", "#1f8a4c", "#c27c0e", "#7b3fb5"];
  new Chart(document.getElementById("leaderboard-chart-canvas"), {
    type: "bar",
    data: {
      labels: data.labels,
      datasets: data.series.map((series, index) => ({ label: series.label, data: series.data, backgroundColor: colours[index % colours.length] })),
    },
    options: { responsive: true, scales: { y: { beginAtZero: true, suggestedMax: 10 } } },
  });
})();
