#!/usr/bin/python3
"""numerical_divergence: a real torch training loop really computes NaN/Inf
(log of a negative target, 0/0, sqrt of a negative, an exploding learning rate,
activations overflowing float32) and the job stops on it: an explicit
isfinite check, autograd anomaly detection, clip_grad_norm_(error_if_nonfinite),
or the check styles of Lightning / detectron2 / fairseq / HF / assert."""
from capture import pycase, generator_main

G = "gen_numerical.py"
L = "numerical_divergence"
C = []


def t(name, argv, notes, rx, **kw):
    kw.setdefault("expect_exit", 1)
    C.append(pycase(name, L, ["train.py"] + argv, notes, G, expect_re=rx, **kw))


t("isfinite-log-negative", ["--nan-at", "12", "--nan-kind", "log", "--nan-check", "isfinite"],
  "loss target log(negative) = NaN at step 12; the script checks torch.isfinite(loss) and raises.", r"Loss is nan")
t("isfinite-div0-inf", ["--nan-at", "7", "--nan-kind", "div0", "--nan-check", "isfinite", "--style", "logging", "--log-every", "1"],
  "loss / (sum - sum) = inf/nan at step 7; explicit check raises.", r"Loss is (nan|inf)")
t("anomaly-sqrt", ["--nan-at", "9", "--nan-kind", "sqrt", "--nan-check", "anomaly"],
  "torch.autograd.set_detect_anomaly(True); sqrt of a negative: 'Function SqrtBackward0 returned nan values'.", r"returned nan values")
t("anomaly-log-hf", ["--nan-at", "4", "--nan-kind", "log", "--nan-check", "anomaly", "--style", "hf", "--log-every", "1"],
  "anomaly detection with HF-style log lines before the NaN.", r"returned nan values")
t("anomaly-lr-explodes", ["--nan-at", "5", "--nan-kind", "lr", "--nan-check", "anomaly", "--optim", "sgd", "--log-every", "1"],
  "learning rate set to 1e12 at step 5; weights overflow; anomaly detection fires in backward.", r"returned (nan|inf) values|nan")
t("clip-grad-nonfinite-lr", ["--nan-at", "10", "--nan-kind", "lr", "--nan-check", "clip", "--log-every", "2"],
  "exploding LR; clip_grad_norm_(error_if_nonfinite=True) raises 'total norm ... is non-finite'.", r"is non-finite")
t("clip-grad-nonfinite-overflow", ["--nan-at", "3", "--nan-kind", "overflow", "--nan-check", "clip", "--style", "bar", "--log-every", "1"],
  "inputs scaled by 1e30: float32 overflow; clip_grad_norm_ error_if_nonfinite raises (progress bar with \\r before).", r"is non-finite")
t("lightning-loss-nan", ["--nan-at", "15", "--nan-kind", "log", "--nan-check", "lightning", "--style", "lightning", "--log-every", "1"],
  "Lightning-style run; the training step returns a NaN loss and the script raises ValueError like Lightning's detect_anomaly check.", r"is nan")
t("detectron-floatingpointerror", ["--nan-at", "20", "--nan-kind", "div0", "--nan-check", "detectron", "--style", "logging", "--log-every", "5"],
  "detectron2-style FloatingPointError 'Loss became infinite or NaN at iteration=N!'.", r"Loss became infinite or NaN")
t("fairseq-min-loss-scale", ["--nan-at", "6", "--nan-kind", "overflow", "--nan-check", "fairseq", "--log-every", "1"],
  "float32 overflow to inf; fairseq-style FloatingPointError 'Minimum loss scale reached'.", r"Minimum loss scale reached")
t("hf-loss-nan-print", ["--nan-at", "8", "--nan-kind", "sqrt", "--nan-check", "hf", "--style", "hf", "--log-every", "1"],
  "HF-style log shows {'loss': nan, ...} then the script stops: 'Loss is nan, stopping training'.", r"'loss': nan")
t("assert-loss-nan", ["--nan-at", "11", "--nan-kind", "log", "--nan-check", "assert", "--style", "json", "--log-every", "1"],
  "JSON metric lines (with benign 'loss_is_nan: false' fields) and then `assert not math.isnan(loss)` fails: AssertionError: loss is nan.", r"AssertionError: loss is nan")
t("isfinite-adam-lr-inf", ["--nan-at", "2", "--nan-kind", "overflow", "--nan-check", "isfinite", "--epochs", "2", "--steps", "10", "--log-every", "1"],
  "overflowing inputs make the loss inf early; explicit isfinite check raises.", r"Loss is (inf|nan)")

# A callback that stops training because the loss is not finite ends the job with exit 0:
# the run stopped early on NaN (taxonomy: "became NaN/Inf and the job stopped"), which is
# what the person needs to hear, not "success".
C.append(pycase("early-stop-nan-exit0", L, ["benign.py", "nan_early_stop"],
                "Lightning-style EarlyStopping(check_finite=True): 'Monitored metric val_loss = nan is not "
                "finite ... Signaling Trainer to stop.', then the script ends with exit 0.",
                G, files=("benign.py",), expect_exit=0, expect_re=r"is not finite"))

# The same with a Keras-style loop whose early stopping (default verbose=0) ends the
# run on its NaN val_loss without a word: the log ends on the last epoch's "loss: nan".
C.append(pycase("early-stop-silent-nan-at-end-exit0", L, ["early_stop.py"],
                "learning rate 1e6 from epoch 6: loss and val_loss become nan; EarlyStopping "
                "(patience 3, verbose 0) ends fit() silently and the script exits 0; the last line "
                "is the last epoch's summary with loss: nan.",
                G, files=("early_stop.py",), expect_exit=0, expect_re=r"loss: nan - val_loss: nan\s*$"))

# ultralytics' YOLO guard: "WARNING: non-finite loss, ending training" and a normal return.
t("yolo-guard-nonfinite-exit0", ["--nan-at", "6", "--nan-kind", "overflow", "--nan-check", "yolo", "--log-every", "1"],
  "inputs scaled by 1e30 from step 6: the loss is inf; the script's ultralytics-style guard prints "
  "'WARNING: non-finite loss, ending training' and ends training normally: exit 0.",
  r"non-finite loss, ending training", expect_exit=0)

if __name__ == "__main__":
    generator_main(C, G)
