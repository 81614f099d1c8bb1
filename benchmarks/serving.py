"""Serving speed: a fitted Pipeline in scikit-learn, in ONNX Runtime, and a bare torch forward.

In one run on the same machine and rows (issue #33): the pipeline
``make_pipeline(StandardScaler(), QMatchEncoder(), LogisticRegression())`` fitted on
20,000 Cover Type rows (the encoder's default network, 512-512, one pretext epoch:
training quality does not matter here), then

* **one row**: ``pipeline.predict_proba(x)`` in scikit-learn, ``session.run`` of the
  pipeline's ONNX file (``qmatch_sklearn.to_onnx``) in ONNX Runtime, and the encoder's
  network alone in torch (``network_(x)`` under ``torch.no_grad``: the floor of any
  serving in torch; in bulk also in 1,024-row chunks, as the library infers, and so
  for ONNX Runtime), each
  called ``--calls`` times after a warm-up, p50 and p99 of the wall time per call;
* **throughput**: the same loops on ``--rows`` rows at once (best of ``--repeats``),
  rows per second;
* **the one call on a raw table** (issue #57): ``QMatchClassifier`` (the same encoder,
  ``passthrough=True``) fitted on the same rows as a DataFrame whose wilderness and
  soil one-hot columns are two string columns, 10% of them labeled, served as a
  DataFrame in scikit-learn and in ONNX Runtime (one input per column), the same
  one-row and throughput loops.

The ONNX session and torch use ``--threads`` intra-op threads, as scikit-learn's
BLAS does (threadpoolctl). The ONNX Runtime probabilities are compared with
scikit-learn's on the throughput rows (max absolute difference, reported).

    python -m benchmarks.serving --data-home ../shared/data   # ~2 minutes on 2 cores
    python -m benchmarks.serving --calls 50 --rows 2000 --out /tmp/s   # smoke
"""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from qmatch_sklearn import QMatchClassifier, QMatchEncoder, __version__, to_onnx
from qmatch_sklearn.datasets import load_covtype

from ._harness import cpu_model

RESULTS = Path(__file__).parent / "results"
#: Rows per call of the chunked torch loop (as the library's own inference).
CHUNK = 1024


def raw_table(X):
    """Cover Type's rows as a raw table: its 10 numeric columns, and its wilderness
    (4) and soil (40) one-hot columns as two string columns."""
    frame = pd.DataFrame(X[:, :10], columns=[f"numeric_{j}" for j in range(10)])
    frame["wilderness"] = np.char.add("area_", X[:, 10:14].argmax(axis=1).astype(str))
    frame["soil"] = np.char.add("soil_", X[:, 14:54].argmax(axis=1).astype(str))
    return frame.astype({"wilderness": object, "soil": object})


def timed_calls(call, calls):
    """Wall seconds of each of ``calls`` calls of ``call()`` after five warm-up calls."""
    for _ in range(5):
        call()
    seconds = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return seconds


def percentile(seconds, q):
    return float(np.percentile(seconds, q))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    import onnxruntime

    torch.set_num_threads(args.threads)
    covtype = load_covtype(data_home=args.data_home, download_if_missing=False)
    rng = np.random.default_rng(0)
    fit_rows = rng.choice(len(covtype.target), 20_000, replace=False)
    serve_rows = rng.choice(len(covtype.target), args.rows, replace=False)
    X, y = covtype.data[fit_rows], covtype.target[fit_rows]
    X_serve = np.ascontiguousarray(covtype.data[serve_rows])
    with warnings.catch_warnings(), threadpool_limits(args.threads):
        warnings.simplefilter("ignore")
        pipeline = make_pipeline(StandardScaler(),
                                 QMatchEncoder(max_epochs=1, random_state=0, device="cpu"),
                                 LogisticRegression(max_iter=200)).fit(X, y)
        frame = raw_table(X)
        labels = np.where(np.arange(len(y)) % 10 == 0, y, -1)
        classifier = QMatchClassifier(
            QMatchEncoder(max_epochs=1, passthrough=True, random_state=0, device="cpu"),
            random_state=0, device="cpu").fit(frame, labels)
    frame_serve = raw_table(X_serve)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(to_onnx(pipeline, X).SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
    raw_session = onnxruntime.InferenceSession(
        to_onnx(classifier, frame).SerializeToString(), options,
        providers=["CPUExecutionProvider"])
    network = pipeline[1].network_
    one = X_serve[:1]

    def raw_feeds(rows):
        return {i.name: rows[[column]].to_numpy()
                for i, column in zip(raw_session.get_inputs(), rows.columns, strict=True)}

    def sklearn_call(rows):
        return pipeline.predict_proba(rows)

    def onnx_call(rows):
        return session.run(None, {"X": rows})[1]

    def onnx_chunks(rows):
        return np.concatenate([session.run(None, {"X": rows[i:i + CHUNK]})[1]
                               for i in range(0, len(rows), CHUNK)])

    def torch_call(rows):
        with torch.no_grad():
            return network(torch.from_numpy(rows)).numpy()

    def torch_chunks(rows):
        with torch.no_grad():
            return np.concatenate([network(torch.from_numpy(rows[i:i + CHUNK])).numpy()
                                   for i in range(0, len(rows), CHUNK)])

    # the graph's inputs built once, as the array loops are given their arrays: a server
    # feeds ONNX Runtime the columns it received
    feeds = {n: raw_feeds(frame_serve.iloc[:n]) for n in (1, len(frame_serve))}

    def raw_sklearn_call(rows):
        return classifier.predict_proba(frame_serve.iloc[:len(rows)])

    def raw_onnx_call(rows):
        return raw_session.run(None, feeds[len(rows)])[1]

    loops = {"scikit-learn pipeline (`predict_proba`)": sklearn_call,
             "ONNX Runtime, the pipeline's ONNX file": onnx_call,
             f"ONNX Runtime, {CHUNK:,}-row chunks": onnx_chunks,
             "bare torch forward of the encoder network": torch_call,
             f"bare torch forward, {CHUNK:,}-row chunks": torch_chunks,
             "raw table: `QMatchClassifier.predict_proba` on a DataFrame": raw_sklearn_call,
             "raw table: ONNX Runtime, one input per column": raw_onnx_call}
    lines = [
        "# Serving speed: scikit-learn, ONNX Runtime and a bare torch forward",
        "",
        f"`python -m benchmarks.serving` on {cpu_model()}, {args.threads} threads (torch, "
        f"ONNX Runtime and BLAS), torch {torch.__version__}, ONNX Runtime "
        f"{onnxruntime.__version__}, qmatch_sklearn {__version__}. Pipeline: StandardScaler, "
        "QMatchEncoder (default network 512-512, embedding 128), LogisticRegression, fitted "
        "on 20,000 Cover Type rows; served on other Cover Type rows (54 float32 columns). "
        f"One row: {args.calls:,} calls after 5 warm-up calls. Throughput: "
        f"{args.rows:,} rows at once, best of {args.repeats}.",
        "",
        "| loop | one row p50 (ms) | one row p99 (ms) | rows/s at once |",
        "| --- | ---: | ---: | ---: |",
    ]
    results = {}
    with threadpool_limits(args.threads):
        for name, call in loops.items():
            one_row = timed_calls(lambda call=call: call(one), args.calls)
            bulk = timed_calls(lambda call=call: call(X_serve), args.repeats)
            results[name] = (percentile(one_row, 50), percentile(one_row, 99),
                             args.rows / min(bulk))
            p50, p99, rate = results[name]
            lines.append(f"| {name} | {1e3 * p50:.3f} | {1e3 * p99:.3f} | {rate:,.0f} |")
            print(lines[-1], flush=True)
        difference = np.abs(onnx_call(X_serve) - sklearn_call(X_serve)).max()
        raw_difference = np.abs(raw_onnx_call(X_serve) - raw_sklearn_call(X_serve)).max()
    (sk, ort_, ort_chunks, bare, chunks, raw_sk, raw_ort) = results.values()
    lines += [
        "",
        f"- ONNX Runtime / scikit-learn, one row p50: {ort_[0] / sk[0]:.2f} "
        "(goal: at most 1). Throughput, ONNX Runtime / bare torch forward (the torch loops "
        "run the encoder alone, ONNX Runtime the whole pipeline; goal: at least 1): in one "
        f"call {ort_[2] / bare[2]:.2f}, in {CHUNK:,}-row chunks {ort_chunks[2] / chunks[2]:.2f}.",
        f"- Largest |ONNX Runtime - scikit-learn| probability over the {args.rows:,} rows: "
        f"{difference:.2e}.",
        f"- The raw table (10 numeric and 2 string columns): ONNX Runtime / scikit-learn, one "
        f"row p50 {raw_ort[0] / raw_sk[0]:.2f}, throughput {raw_ort[2] / raw_sk[2]:.2f}; "
        f"largest probability difference {raw_difference:.2e}.",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "serving.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-3:]))


if __name__ == "__main__":
    main()
