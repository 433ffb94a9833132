// The playback gate of blind review and of listening studies, one script for all three pages.
//
// A verdict or a rating opens only after the recording has played to the end. The rule lives on
// the server (annotation.recording.access.verdict_unlocked, evaluation.studies.access.rating_unlocked):
// the browser only reports "played to the end", and the server checks that it sent this person
// every byte of the audio and that the audio's length has passed since the first one
// (webapp/listening.py) before it records the playback, so removing this script, or a script
// that reports "played" without fetching the audio, does not get around the rule. What the script adds: a jump ahead of what was heard is undone until the
// recording has played once. Time counts as heard only when reached by playing on (a step of at
// most a second), never by a jump.
(function () {
  "use strict";
  const MAX_HEARD_STEP_S = 1.0;
  const JUMP_TOLERANCE_S = 0.5;

  function csrfToken() {
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  // A player seen the same way whatever draws it: an <audio> element or an EchoWaveform.
  function audioSource(audio) {
    return {
      onTime: (listener) => audio.addEventListener("timeupdate", () => { if (!audio.seeking) listener(audio.currentTime); }),
      onJump: (listener) => audio.addEventListener("seeking", () => listener(audio.currentTime)),
      onEnd: (listener) => audio.addEventListener("ended", listener),
      setTime: (seconds) => { audio.currentTime = seconds; },
    };
  }

  function waveformSource(player) {
    return {
      onTime: (listener) => player.on("timeupdate", listener),
      onJump: (listener) => player.on("interaction", listener),
      onEnd: (listener) => player.on("finish", listener),
      setTime: (seconds) => player.setTime(seconds),
    };
  }

  // Gate one recording. `isUnlocked()` says whether the server has opened it already; `playedUrl`
  // is where "played to the end" is reported; `onUnlocked(body)` and `onRefused(message)` update the
  // page. Returns nothing: the page follows the server's answer.
  function gate(source, options) {
    let heardUntil = 0;
    source.onTime((seconds) => {
      if (seconds > heardUntil && seconds - heardUntil <= MAX_HEARD_STEP_S) heardUntil = seconds;
    });
    source.onJump((seconds) => {
      if (!options.isUnlocked() && seconds > heardUntil + JUMP_TOLERANCE_S) source.setTime(heardUntil);
    });
    source.onEnd(async () => {
      if (options.isUnlocked() || (options.mayReport && !options.mayReport())) return;
      const response = await fetch(options.playedUrl, {
        method: "POST",
        headers: { "X-CSRFToken": csrfToken() },
        credentials: "same-origin",
      });
      const body = await response.json().catch(() => ({}));
      if (response.ok && body.unlocked) {
        options.onUnlocked(body);
      } else {
        heardUntil = 0;  // refused: the whole recording is to be heard again
        options.onRefused(body.error || options.refusedText);
      }
    });
  }

  window.EchoPlaybackGate = { gate: gate, audioSource: audioSource, waveformSource: waveformSource };
})();
