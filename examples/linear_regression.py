"""Linear regression in static mode: build a Program, let SGD append backward and update ops, train.

    python examples/linear_regression.py

Fits y = x @ [2, -3.4] + 4.2 (plus a little noise) and prints the learned weight and bias.
"""
import numpy as np

import fluidgrad as fg
from fluidgrad.optimizer import SGD

rng = np.random.default_rng(0)
true_w, true_b = np.array([[2.0], [-3.4]], "float32"), 4.2
features = rng.normal(size=(1000, 2)).astype("float32")
targets = (features @ true_w + true_b + rng.normal(0, 0.01, size=(1000, 1))).astype("float32")

main, startup = fg.Program(), fg.Program()
with fg.program_guard(main, startup):
    x = fg.static.data("x", [None, 2])
    y = fg.static.data("y", [None, 1])
    prediction = fg.static.nn.fc(x, 1)          # x @ W + b, W is [2, 1]
    loss = fg.mean(fg.square(prediction - y))   # mean squared error
    SGD(learning_rate=0.03).minimize(loss)      # appends the gradient ops and the sgd updates

print(main)                                     # forward, backward and optimizer ops, one per line

exe = fg.Executor()
exe.run(startup)                                # initialise W and b
for epoch in range(3):
    for start in range(0, len(features), 10):
        batch = slice(start, start + 10)
        (loss_value,) = exe.run(main, feed={"x": features[batch], "y": targets[batch]}, fetch_list=[loss])
    print(f"epoch {epoch + 1}: loss {float(loss_value):.6f}")

weight, bias = (fg.global_scope()[p.name] for p in main.all_parameters())
print("learned w:", weight.ravel(), " true w:", true_w.ravel())
print("learned b:", bias, " true b:", true_b)
