// A comparison trial (CCR, A/B, MUSHRA): every sample gated like a single reply (playback_gate.js),
// one playing at a time, and the answer opened once the server says every sample was heard
// (evaluation.studies.access.trial_refusal; the browser only mirrors its answer).
(function () {
  "use strict";
  const root = document.getElementById("trial");
  if (!root) return;
  const controls = document.getElementById("trial-controls");
  const form = document.getElementById("trial-form");
  const hint = document.getElementById("form-hint");
  const players = Array.from(root.querySelectorAll("[data-slot]"));
  let submitting = false;

  function unlockTrial() {
    root.dataset.unlocked = "true";
    controls.disabled = false;
    hint.textContent = "Every sample heard: answer and submit.";
  }

  players.forEach((slot) => {
    const audio = slot.querySelector("audio");
    const status = slot.querySelector(".playback-status");
    audio.addEventListener("play", () => {
      players.forEach((other) => { const a = other.querySelector("audio"); if (a !== audio) a.pause(); });
    });
    EchoPlaybackGate.gate(EchoPlaybackGate.audioSource(audio), {
      isUnlocked: () => slot.dataset.played === "true",
      playedUrl: slot.dataset.playedUrl,
      onUnlocked: (body) => {
        slot.dataset.played = "true";
        status.textContent = "Played.";
        if (body.trial_unlocked) unlockTrial();
      },
      onRefused: (message) => { status.textContent = message; },
      refusedText: "The playback could not be recorded; play the sample again.",
    });
    const slider = slot.querySelector("input[type=range]");
    if (slider) slider.addEventListener("input", () => { slot.querySelector("output").textContent = slider.value; });
  });

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (submitting) return;
    if (root.dataset.unlocked !== "true") { hint.textContent = "Play every sample to the end first."; return; }
    if (!form.checkValidity()) { hint.textContent = "Choose an answer first."; return; }
    submitting = true;
    form.submit();
  });
})();
