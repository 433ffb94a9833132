// Blind review with the keyboard: space plays or pauses, "a" accepts, "r" opens the reasons
// (1-6 tick them), enter sends the reject, escape closes the reasons. Typing in the comment box
// is never taken for a shortcut.
(function () {
  "use strict";
  const section = document.getElementById("review");
  if (!section) return;
  const container = document.getElementById("waveform");
  const playButton = document.getElementById("play-toggle");
  const form = document.getElementById("verdict-form");

  function isTyping(target) {
    return target instanceof HTMLTextAreaElement ||
      (target instanceof HTMLInputElement && !["checkbox", "radio", "button", "submit"].includes(target.type));
  }

  const player = window.WaveSurfer.create({
    container: container,
    url: section.dataset.audioUrl,
    height: 110,
    waveColor: "#9aa8c7",
    progressColor: "#2f5bd3",
  });
  // The page's state for people and tests alike: is the take playing right now?
  player.on("play", function () { container.dataset.playing = "true"; });
  player.on("pause", function () { container.dataset.playing = "false"; });
  player.on("finish", function () { container.dataset.playing = "false"; });
  playButton.addEventListener("click", function () { player.playPause(); });

  if (!form) {
    document.addEventListener("keydown", function (event) {
      if (event.key === " " && !isTyping(event.target) && !(event.target instanceof HTMLButtonElement)) {
        event.preventDefault();
        player.playPause();
      }
    });
    return;
  }

  const reasons = document.getElementById("reasons");
  const acceptButton = document.getElementById("accept");
  const rejectButton = document.getElementById("reject");
  form.classList.add("js-enhanced");
  if (form.querySelector("[data-testid=form-errors]") || form.querySelector("[name=reasons]:checked")) {
    form.classList.add("rejecting");
  }

  function openReasons() {
    form.classList.add("rejecting");
    reasons.focus();
  }

  rejectButton.addEventListener("click", function (event) {
    if (!form.classList.contains("rejecting")) { event.preventDefault(); openReasons(); }
  });

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || isTyping(event.target)) return;
    const rejecting = form.classList.contains("rejecting");
    if (event.key === " ") {
      // A focused checkbox or button keeps its own space bar (tick, press); elsewhere space plays.
      if (event.target instanceof HTMLInputElement || event.target instanceof HTMLButtonElement) return;
      event.preventDefault();
      player.playPause();
    } else if (event.key === "a" || event.key === "A") {
      event.preventDefault();
      form.requestSubmit(acceptButton);
    } else if (event.key === "r" || event.key === "R") {
      event.preventDefault();
      openReasons();
    } else if (rejecting && /^[1-9]$/.test(event.key)) {
      const box = form.querySelector('[name=reasons][data-key="' + event.key + '"]');
      if (box) { event.preventDefault(); box.checked = !box.checked; }
    } else if (rejecting && event.key === "Enter") {
      event.preventDefault();
      form.requestSubmit(rejectButton);
    } else if (rejecting && event.key === "Escape") {
      form.classList.remove("rejecting");
    }
  });
})();
