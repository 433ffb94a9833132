"""Real pretrained speech models that ship inside PyPI wheels and run offline on a CPU (issue 26).

One module per model, one function per question, plain inputs (16 kHz float samples in [-1, 1])
and plain outputs. Each module imports its library inside the function that needs it, so this
package is cheap to import and the web process never loads onnxruntime, pocketsphinx or torch;
the take analysis job (`annotation.recording.takes.analyze_take`) is where they load.

- `alignment`: forced alignment with pocketsphinx (script check against a free phone loop, word
  and phone timing, rate)
- `activity`: speech regions with silero-vad's ONNX model through onnxruntime
- `quality`: DNSMOS P.808 and P.835, PLCMOS (speechmos, ONNX)
- `loudness`: integrated loudness and true peak (pyloudnorm, ITU-R BS.1770)
- `speaker`: a speaker embedding (Resemblyzer's GE2E encoder) and cosine similarity
- `conditions`: the take's SNR from the VAD's speech and non-speech (every flag carries it)
- `events`: vocal events outside speech (laugh, breath, sigh, cough, sob) and trim advice that keeps them
- `take_check`: all of them on one take, with the flags an actor reads

A lab swaps in its own model by path through the environment variables in `paths`.
"""
