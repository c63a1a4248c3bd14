"""A recurrent network whose time loop is a `while_loop`, trained in static mode.

    python examples/rnn.py

The network reads a sequence of numbers one step at a time, h = tanh(x_t W + h U + b),
and predicts their sum from the last h. The sequence length is data: each batch is fed
with its own length, and the same Program runs the loop that many times, forward and
backward (the gradient walks the steps in reverse).
"""
import numpy as np

import fluidgrad as fg
from fluidgrad import static
from fluidgrad.optimizer import Adam

BATCH, HIDDEN = 32, 16
rng = np.random.default_rng(0)


def make_batch(length):
    seq = rng.uniform(-0.5, 0.5, size=(length, BATCH, 1)).astype("float32")
    return {"seq": seq, "length": np.array(length), "target": seq.sum(axis=0)}


main, startup = fg.Program(), fg.Program()
with fg.program_guard(main, startup):
    seq = static.data("seq", [None, BATCH, 1])        # [time, batch, 1]
    length = static.data("length", [], "int64")       # how many steps the loop runs
    target = static.data("target", [BATCH, 1])
    W = static.create_parameter([1, HIDDEN], "float32", name="W")
    U = static.create_parameter([HIDDEN, HIDDEN], "float32", name="U")
    b = static.create_parameter([HIDDEN], "float32", name="b", is_bias=True)

    def step(i, h):
        x_t = fg.gather(seq, i)                       # [batch, 1]: row i of the sequence
        return i + 1, fg.tanh(fg.matmul(x_t, W) + fg.matmul(h, U) + b)

    start = [fg.zeros([], "int64"), fg.zeros([BATCH, HIDDEN])]
    _, h_last = static.nn.while_loop(lambda i, h: i < length, step, start)
    prediction = static.nn.fc(h_last, 1)
    loss = fg.mean(fg.square(prediction - target))
    Adam(learning_rate=0.003).minimize(loss)          # backward through the loop, then updates

exe = fg.Executor()
exe.run(startup)
for it in range(1, 2001):
    (value,) = exe.run(main, feed=make_batch(int(rng.integers(3, 12))), fetch_list=[loss])
    if it % 400 == 0:
        print(f"step {it}: loss {float(value):.5f}")

test_program = main.clone(for_test=True)             # forward only
for n in (4, 11, 16):                                 # 16 is longer than any training sequence
    batch = make_batch(n)
    (guess,) = exe.run(test_program, feed=batch, fetch_list=[prediction.name])
    error = np.abs(guess - batch["target"]).mean()
    print(f"length {n:2d}: mean |prediction - sum| = {error:.3f} (the sums spread {batch['target'].std():.3f})")
