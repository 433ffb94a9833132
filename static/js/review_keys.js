// Blind review with the keyboard: space plays or pauses, "a" accepts, "r" opens the reasons
// (1-6 tick them), enter sends the reject, escape closes the reasons, + and - zoom, [ and ] change
// the speed (remembered). Typing in the comment box is never taken for a shortcut.
//
// The playback gate (playback_gate.js): the verdict buttons stay disabled until the take has played
// to the end; the server refuses a verdict on a take whose playback it has not recorded.
(function () {
  "use strict";
  const section = document.getElementById("review");
  if (!section) return;
  const container = document.getElementById("waveform");
  const playButton = document.getElementById("play-toggle");
  const speed = document.getElementById("speed");
  const form = document.getElementById("verdict-form");
  const status = document.getElementById("playback-status");
  let unlocked = section.dataset.unlocked === "true";

  function isTyping(target) {
    return target instanceof HTMLTextAreaElement ||
      (target instanceof HTMLInputElement && !["checkbox", "radio", "button", "submit"].includes(target.type));
  }

  const player = EchoWaveform.create({
    container: container, subject: "the take under review", url: section.dataset.audioUrl, speedSelect: speed,
  });
  EchoWaveform.bindPlayButton(player, playButton);
  // The page's state for people and tests alike: is the take playing right now?
  ["play", "pause", "finish"].forEach(function (name) {
    player.on(name, function () { container.dataset.playing = String(name === "play"); });
  });
  section.querySelectorAll("[data-action=zoom-in], [data-action=zoom-out]").forEach(function (button) {
    button.addEventListener("click", function () {
      EchoWaveform.zoomBy(player, container, button.dataset.action === "zoom-in" ? 1 : -1);
    });
  });

  function say(text, isError) {
    if (!status) return;
    status.textContent = text;
    status.classList.toggle("error", Boolean(isError));
    status.classList.toggle("muted", !isError);
  }

  function unlock() {
    unlocked = true;
    section.dataset.unlocked = "true";
    if (form) form.querySelectorAll("button[type=submit]").forEach(function (button) { button.disabled = false; });
    say("Played to the end: the verdict is open.", false);
  }

  EchoPlaybackGate.gate(EchoPlaybackGate.waveformSource(player), {
    isUnlocked: function () { return unlocked; },
    mayReport: function () { return Boolean(form); },  // a decided take has no verdict to open
    playedUrl: section.dataset.playedUrl,
    onUnlocked: unlock,
    onRefused: function (message) { say(message, true); },
    refusedText: "The playback could not be recorded; play the take again.",
  });

  function zoomOrSpeed(event) {
    const zoom = EchoWaveform.zoomKey(event);
    if (zoom) { event.preventDefault(); EchoWaveform.zoomBy(player, container, zoom); return true; }
    if (event.key === "[" || event.key === "]") { EchoWaveform.stepSpeed(speed, event.key === "[" ? -1 : 1); return true; }
    return false;
  }

  if (!form) {
    EchoKeys.bind(function (event) {
      if (isTyping(event.target)) return;
      if (zoomOrSpeed(event)) return;
      if (event.key === " " && !EchoKeys.ownsSpace(event.target)) {
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

  function sendVerdict(button) {
    if (!unlocked) { say("Play the whole take once before giving a verdict.", true); return; }
    form.requestSubmit(button);
  }

  rejectButton.addEventListener("click", function (event) {
    if (!form.classList.contains("rejecting")) { event.preventDefault(); openReasons(); }
  });

  // Esc also leaves whatever has focus (EchoKeys.bind, static/js/shortcuts.js).
  EchoKeys.bind(function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || isTyping(event.target)) return;
    if (zoomOrSpeed(event)) return;
    const rejecting = form.classList.contains("rejecting");
    if (event.key === " ") {
      // A focused checkbox or button keeps its own space bar (tick, press); elsewhere space plays.
      if (EchoKeys.ownsSpace(event.target)) return;
      event.preventDefault();
      player.playPause();
    } else if (event.key === "a" || event.key === "A") {
      event.preventDefault();
      sendVerdict(acceptButton);
    } else if (event.key === "r" || event.key === "R") {
      event.preventDefault();
      openReasons();
    } else if (rejecting && /^[1-9]$/.test(event.key)) {
      const box = form.querySelector('[name=reasons][data-key="' + event.key + '"]');
      if (box) { event.preventDefault(); box.checked = !box.checked; }
    } else if (rejecting && event.key === "Enter") {
      event.preventDefault();
      sendVerdict(rejectButton);
    } else if (rejecting && event.key === "Escape") {
      form.classList.remove("rejecting");
    }
  });
})();
