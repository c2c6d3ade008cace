"""``ppedu mnist``: one JSON object or a progress bar and table; bad input is one line, exit 2."""

import json
import subprocess
import sys

import pytest

from ppedu.cli import main

KEYS = {"loss_first", "loss_last", "test_accuracy", "max_grad_diff_vs_reference", "predicted_bubble_ratio",
        "measured_bubble_ratio", "peak_activation_bytes", "seconds"}


def test_json_reports_the_lab_metrics(capsys, tmp_path):
    assert main(["mnist", "--schedule", "zb-h1", "-p", "2", "-m", "4", "--steps", "3", "--batch-size", "32",
                 "--json", "--png", str(tmp_path / "step.png")]) == 0
    assert (tmp_path / "step.png").read_bytes()[:4] == b"\x89PNG"
    out = json.loads(capsys.readouterr().out)
    assert KEYS <= set(out)
    assert out["max_grad_diff_vs_reference"] <= 1e-6
    assert len(out["peak_activation_bytes"]) == 2 and out["peak_activation_bytes"][0] > out["peak_activation_bytes"][1]
    assert len(out["losses"]) == 3 and 0 < out["predicted_bubble_ratio"] < 1 and 0 < out["measured_bubble_ratio"] < 1


def test_without_json_a_progress_bar_and_a_table(capsys):
    assert main(["mnist", "--schedule", "interleaved", "-p", "2", "-m", "2", "-v", "2", "--steps", "2",
                 "--batch-size", "8", "--model", "cnn"]) == 0
    captured = capsys.readouterr()
    assert "2/2" in captured.err  # tqdm's bar
    assert "test accuracy" in captured.out and "GPU 1:" in captured.out


def test_bad_input_is_one_line_with_exit_status_2():
    run = subprocess.run([sys.executable, "-m", "ppedu", "mnist", "--schedule", "interleaved", "-p", "4", "-m", "8",
                          "-v", "4", "--steps", "1"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stdout == "" and "Traceback" not in run.stderr
    assert run.stderr == "ppedu: error: cannot cut a model of 8 layers into 16 chunks (at most one chunk per layer)\n"


@pytest.mark.parametrize("args,message", [
    (["--schedule", "1f1b", "-p", "2", "-m", "32", "--batch-size", "16"], "m=32 micro-batches need a batch of at least 32"),
    (["--schedule", "gpipe", "-p", "2", "-m", "2", "--model", "resnet"], "unknown model 'resnet'"),
    (["--schedule", "zigzag", "-p", "2", "-m", "2"], "unknown schedule 'zigzag'"),
    (["--schedule", "1f1b", "-p", "2", "-m", "2", "--steps", "0"], "steps must be at least 1"),
])
def test_every_rule_is_named(args, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["mnist", *args])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and message in err and err.count("\n") == 1
