/* The dialogue leaderboard's score-by-turn line chart (Chart.js 4, vendored). Data: #turn-chart. */
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("turn-chart").textContent);
  const colours = ["#2f5bd3", "#1f8a4c", "#c27c0e", "#7b3fb5", "#b3261e", "#00838f"];
  new Chart(document.getElementById("turn-chart-canvas"), {
    type: "line",
    data: {
      labels: data.labels,
      datasets: data.series.map((series, index) => ({
        label: series.label,
        data: series.data,
        borderColor: colours[index % colours.length],
        backgroundColor: colours[index % colours.length],
        spanGaps: true,
      })),
    },
    options: { responsive: true, scales: { y: { beginAtZero: true, suggestedMax: 10 } } },
  });
})();
