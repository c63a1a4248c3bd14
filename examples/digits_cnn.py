"""A small CNN on scikit-learn's 8x8 digits, static mode, in one screen (`fluidgrad demo` does the same).

    python examples/digits_cnn.py [OUT_DIR]   # needs scikit-learn (pip install 'fluidgrad[demo]')

Builds a Program with conv2d / max_pool2d / fc, lets Adam append the backward and update
ops, trains for a few epochs, evaluates the test program, and saves an inference model into
OUT_DIR (default: a new temporary folder; the path is printed), never into the current folder.
"""
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # tiny matrices: BLAS threads cost more than they give

import numpy as np  # noqa: E402
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import fluidgrad as fg
import fluidgrad.nn.functional as F
from fluidgrad.optimizer import Adam

digits = load_digits()
images = (digits.images / 16.0).astype("float32")[:, None]          # [N, 1, 8, 8]
labels = digits.target.astype("int64")[:, None]                     # [N, 1]
x_train, x_test, y_train, y_test = train_test_split(images, labels, test_size=0.2, random_state=0,
                                                    stratify=digits.target)

main, startup = fg.Program(), fg.Program()
with fg.program_guard(main, startup):
    image = fg.static.data("image", [None, 1, 8, 8])
    label = fg.static.data("label", [None, 1], "int64")
    h = fg.static.nn.conv2d(image, num_filters=16, filter_size=3, padding=1, activation="relu")
    h = F.max_pool2d(h, kernel_size=2)                                  # 16 x 4 x 4
    h = fg.static.nn.conv2d(h, num_filters=32, filter_size=3, padding=1, activation="relu")
    h = F.max_pool2d(h, kernel_size=2)                                  # 32 x 2 x 2
    logits = fg.static.nn.fc(h, 10)
    test_program = main.clone(for_test=True)                            # forward only, for evaluation
    loss = fg.mean(F.softmax_with_cross_entropy(logits, label))
    Adam(learning_rate=0.01).minimize(loss)                             # backward + Adam update ops

fg.seed(0)
exe = fg.Executor()
exe.run(startup)
rng = np.random.default_rng(0)
for epoch in range(12):
    order = rng.permutation(len(x_train))
    for start in range(0, len(order), 32):
        batch = order[start:start + 32]
        (loss_value,) = exe.run(main, feed={"image": x_train[batch], "label": y_train[batch]}, fetch_list=[loss])
    (test_logits,) = exe.run(test_program, feed={"image": x_test}, fetch_list=[logits])
    accuracy = (test_logits.argmax(axis=1) == y_test[:, 0]).mean()
    print(f"epoch {epoch + 1:2d}  last batch loss {float(loss_value):.4f}  test accuracy {accuracy:.3f}")

out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="fluidgrad-digits-cnn-"))
fg.static.save_inference_model(out_dir / "digits_cnn", [image], [logits], exe, program=main)
print(f"saved the inference model in {out_dir}; try `fluidgrad show {out_dir / 'digits_cnn'}`")
