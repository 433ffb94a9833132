// The actor's recorder: record in the browser (MediaRecorder) with a live level meter, or pick a
// file; either way listen to it and see its waveform before sending it to the take upload API.
(function () {
  "use strict";
  const root = document.getElementById("recorder");
  if (!root) return;

  const startButton = document.getElementById("record-start");
  const stopButton = document.getElementById("record-stop");
  const meter = document.getElementById("level");
  const clock = document.getElementById("record-clock");
  const hint = document.getElementById("record-hint");
  const fileInput = document.getElementById("audio-file");
  const preview = document.getElementById("preview");
  const previewAudio = document.getElementById("preview-audio");
  const submitButton = document.getElementById("submit-take");
  const discardButton = document.getElementById("discard-take");
  const status = document.getElementById("upload-status");
  const maxSeconds = parseFloat(root.dataset.maxSeconds || "60");
  const csrfToken = root.querySelector("[name=csrfmiddlewaretoken]").value;

  let pending = null; // {blob, name} waiting to be submitted
  let objectUrl = null;
  let waveform = null;

  function say(message, isError) {
    status.textContent = message;
    status.classList.toggle("error", Boolean(isError));
  }

  function showPreview(blob, name) {
    pending = { blob: blob, name: name };
    if (objectUrl) URL.revokeObjectURL(objectUrl);
    objectUrl = URL.createObjectURL(blob);
    preview.hidden = false;
    submitButton.disabled = false;
    say("Listen to it, then submit it or discard it.");
    if (!window.WaveSurfer || !window.EchoWaveform) { previewAudio.src = objectUrl; return; }
    if (waveform) waveform.destroy();
    const container = document.getElementById("preview-waveform");
    container.dataset.ready = "false";
    // Drawn from the same <audio> (wavesurfer gives it the source), so the waveform follows what
    // the actor hears. Only a waveform that never became ready is worth a word: a load superseded
    // by a newer one (AbortError) or refused after drawing said nothing true about the file.
    const drawing = window.EchoWaveform.create({ container: container, subject: "the new take", media: previewAudio });
    waveform = drawing;
    drawing.load(objectUrl).catch(function (error) {
      console.warn("preview waveform:", error);
      if (waveform !== drawing || container.dataset.ready === "true") return;
      if (error && error.name === "AbortError") return;
      say("This file cannot be drawn here; you can still submit it and the server will check it.");
    });
  }

  function clearPreview() {
    pending = null;
    preview.hidden = true;
    previewAudio.removeAttribute("src");
    if (waveform) { waveform.destroy(); waveform = null; }
    if (objectUrl) { URL.revokeObjectURL(objectUrl); objectUrl = null; }
    fileInput.value = "";
  }

  fileInput.addEventListener("change", function () {
    const file = fileInput.files && fileInput.files[0];
    if (file) showPreview(file, file.name);
  });
  discardButton.addEventListener("click", function () { clearPreview(); say(""); });

  submitButton.addEventListener("click", async function () {
    if (!pending) return;
    submitButton.disabled = true;
    say("Uploading and checking…");
    const body = new FormData();
    body.append("audio", pending.blob, pending.name);
    let response;
    try {
      response = await fetch(root.dataset.uploadUrl, {
        method: "POST",
        body: body,
        headers: { "X-CSRFToken": csrfToken, Accept: "application/json" },
        credentials: "same-origin",
      });
    } catch (error) {
      submitButton.disabled = false;
      say("The upload did not reach the server; check your connection and try again.", true);
      return;
    }
    const answer = await response.json().catch(function () { return {}; });
    if (response.status === 201) {
      clearPreview();
      say("Take received. It is being analysed and then goes to three reviewers.");
      if (window.htmx) {
        window.htmx.ajax("GET", root.dataset.historyUrl, { target: "#take-history", swap: "outerHTML" });
      }
    } else {
      submitButton.disabled = false;
      say(answer.detail || "The take was refused (" + response.status + ").", true);
    }
  });

  // --- Recording in the browser ------------------------------------------------------------------
  if (!navigator.mediaDevices || !window.MediaRecorder) {
    startButton.disabled = true;
    hint.textContent = "This browser cannot record here (recording needs https and a recent browser); upload a file instead.";
    return;
  }

  let recorder = null;
  let stream = null;
  let audioContext = null;
  let meterFrame = 0;
  let startedAt = 0;

  function pickMimeType() {
    const wanted = ["audio/webm;codecs=opus", "audio/ogg;codecs=opus", "audio/webm", "audio/mp4"];
    return wanted.find(function (type) { return MediaRecorder.isTypeSupported(type); }) || "";
  }

  function watchLevel(source) {
    const analyser = audioContext.createAnalyser();
    analyser.fftSize = 2048;
    source.connect(analyser);
    const samples = new Float32Array(analyser.fftSize);
    function tick() {
      analyser.getFloatTimeDomainData(samples);
      let peak = 0;
      for (let i = 0; i < samples.length; i++) peak = Math.max(peak, Math.abs(samples[i]));
      meter.value = peak;
      const seconds = (performance.now() - startedAt) / 1000;
      clock.textContent = seconds.toFixed(1) + " s";
      if (seconds >= maxSeconds) { stopRecording(); return; }
      meterFrame = requestAnimationFrame(tick);
    }
    tick();
  }

  async function startRecording() {
    clearPreview();
    try {
      // Raw input: the reviewers judge the performance, not the browser's noise suppression.
      stream = await navigator.mediaDevices.getUserMedia({
        audio: { echoCancellation: false, noiseSuppression: false, autoGainControl: false },
      });
    } catch (error) {
      say("The microphone is not available (" + error.name + "). Allow access, or upload a file.", true);
      return;
    }
    const mimeType = pickMimeType();
    const active = new MediaRecorder(stream, mimeType ? { mimeType: mimeType } : {});
    recorder = active;
    const chunks = [];
    active.addEventListener("dataavailable", function (event) { if (event.data.size) chunks.push(event.data); });
    // Fires after stopRecording has let go of `recorder`, hence the local `active`.
    active.addEventListener("stop", function () {
      const type = active.mimeType || mimeType || "audio/webm";
      const extension = type.indexOf("ogg") >= 0 ? "ogg" : type.indexOf("mp4") >= 0 ? "m4a" : "webm";
      showPreview(new Blob(chunks, { type: type }), "recording." + extension);
    });
    audioContext = new AudioContext();
    watchLevel(audioContext.createMediaStreamSource(stream));
    startedAt = performance.now();
    active.start();
    startButton.disabled = true;
    stopButton.disabled = false;
    say("Recording…");
  }

  function stopRecording() {
    cancelAnimationFrame(meterFrame);
    meter.value = 0;
    if (recorder && recorder.state !== "inactive") recorder.stop();
    if (stream) stream.getTracks().forEach(function (track) { track.stop(); });
    if (audioContext) audioContext.close();
    recorder = null; stream = null; audioContext = null;
    startButton.disabled = false;
    stopButton.disabled = true;
  }

  startButton.addEventListener("click", startRecording);
  stopButton.addEventListener("click", stopRecording);
})();
