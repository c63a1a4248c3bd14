"""What tests/test_review_s14_docs.py needs to run the docs' code blocks as a new user would: the
blocks of each page, and for a block that shows only the lines that matter (`model`, `loss`,
`x` defined elsewhere) the few lines a user writes before it, stated here once, per block."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def doc_pages() -> list[Path]:
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


def python_blocks(page: Path) -> list[tuple[int, str]]:
    """(line number, source) of each ```python block, in page order."""
    text = page.read_text()
    return [(text[:m.start()].count("\n") + 1, m.group(1))
            for m in re.finditer(r"```python\n(.*?)```", text, re.S)]


def block_key(page: Path, source: str) -> str:
    """`page:first statement` (imports and comments skipped; 60 characters): stable when blocks are added around it."""
    lines = [line.strip() for line in source.splitlines() if line.strip()]
    first = next((line for line in lines if not line.startswith(("import ", "from ", "#"))), lines[0])
    return f"{page.relative_to(ROOT)}:{first[:60]}"


def shown_output(source: str) -> str:
    """The block's trailing `# ...` lines after its last statement: the output the page shows."""
    lines = source.rstrip().splitlines()
    shown = []
    while lines and lines[-1].startswith("# "):
        shown.insert(0, lines.pop()[2:])
    return "\n".join(shown)


# The lines a user writes before a fragment (names the page leaves to the reader), by block key.
_TORCH_NET = '''
import numpy as np
import fluidgrad as fg
x, y = fg.randn(64, 4), fg.randint(0, 3, (64,))
labels = fg.randint(0, 3, (64,)).to(fg.int32)
scores = fg.randn(8, 10)

class Net(fg.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = fg.nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)

fg.save(Net().state_dict(), "model.pt")
'''

_STATIC_MLP = '''
import numpy as np
import fluidgrad as fg
fg.seed(0)
main, startup = fg.Program(), fg.Program()

def build_model():
    global block1_out, block2_out, x
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 8], "float64")
        h, outs = x, []
        for _ in range(6):
            h = fg.static.nn.fc(h, 8, activation="tanh")
            outs.append(h)
        block1_out, block2_out = outs[1], outs[3]
        return fg.mean(h)
'''

_GPT = '''
import importlib.util
import numpy as np
import fluidgrad as fg
import fluidgrad.nn.functional as F
_spec = importlib.util.spec_from_file_location("char_gpt", ROOT / "examples" / "char_gpt.py")
char_gpt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(char_gpt)
fg.seed(0)
vocab = 11
model = char_gpt.CharGPT(char_gpt.Config(vocab, block_size=8, n_embd=16, n_head=2, n_layer=2))
_rng = np.random.default_rng(0)
idx = fg.to_tensor(_rng.integers(0, vocab, (2, 8)))
targets = fg.to_tensor(_rng.integers(0, vocab, (2, 8)))
'''

_EAGER_TRAINED = '''
import numpy as np
import fluidgrad as fg
model = fg.nn.Sequential(fg.nn.Linear(4, 8), fg.nn.ReLU(), fg.nn.Linear(8, 3))
opt = fg.optimizer.Adam(model.parameters(), lr=1e-2)
for _ in range(2):
    fg.nn.functional.cross_entropy(model(fg.randn(8, 4)), fg.randint(0, 3, (8,))).backward()
    opt.step()
    opt.zero_grad()
epoch = 3
'''

_TORCH_TWIN = '''
import numpy as np
import safetensors.torch
import torch
import fluidgrad as fg
torch.manual_seed(0)
torch_model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
torch_model(torch.randn(16, 4))          # running statistics that are not the defaults
model = fg.nn.Sequential(fg.nn.Linear(4, 3), fg.nn.BatchNorm1d(3))
safetensors.torch.save_file(torch_model.state_dict(), "model.safetensors", metadata={"format": "pt"})
arrays = {k: v.numpy() for k, v in torch_model.state_dict().items()}
'''

_DEPLOY = '''
import fluidgrad as fg
model = fg.nn.Sequential(fg.nn.Linear(784, 10))
images = fg.randn(2, 784)
'''

_ONNX_FILES = '''
import numpy as np
import fluidgrad as fg
from fluidgrad.static import InputSpec
_net = fg.nn.Sequential(fg.nn.Conv2D(1, 2, 3), fg.nn.ReLU(), fg.nn.Flatten(), fg.nn.Linear(8, 3))
fg.onnx.export(_net, "resnet.onnx", [fg.randn(1, 1, 4, 4)])
layer = model = fg.nn.Sequential(fg.nn.Linear(4, 2), fg.nn.Tanh())
example_tensor = fg.randn(3, 4)
main, _startup = fg.Program(), fg.Program()
with fg.program_guard(main, _startup):
    x = fg.static.data("x", [None, 4], "float32")
    logits = fg.static.nn.fc(x, 2)
fg.Executor().run(_startup)
'''

_STATIC_DIST = '''
import numpy as np
import fluidgrad as fg
main, startup = fg.Program(), fg.Program()
exe = fg.Executor()
_rng = np.random.default_rng(0)
x, y = _rng.random((8, 4)).astype("float32"), _rng.random((8, 1)).astype("float32")
'''

_STATIC_DIST_BUILD = '''
with fg.program_guard(main, startup):
    _x = fg.static.data("x", [None, 4], "float32")
    _y = fg.static.data("y", [None, 1], "float32")
    loss = fg.nn.functional.mse_loss(fg.static.nn.fc(_x, 1), _y)
'''

_EAGER_DIST = '''
import numpy as np
import fluidgrad as fg
import fluidgrad.distributed as dist
fg.seed(0)
MyLayer = lambda: fg.nn.Linear(4, 1)
net = MyLayer()
loss_fn = fg.nn.functional.mse_loss
x_shard, y_shard, x2, y2 = fg.randn(8, 4), fg.randn(8, 1), fg.randn(8, 4), fg.randn(8, 1)
'''

NAMES_FIRST_LINES = 'docs/guide/names.md:device = torch.device("cuda" if torch.cuda.is_available() el'
RECOMPUTE_CHECKPOINTS = "docs/guide/recompute.md:loss = build_model()"
RECOMPUTE_POLICY = "docs/guide/recompute.md:fg.append_backward(loss, checkpoints=fg.RecomputePolicy([blo"
RECOMPUTE_TRACED = "docs/guide/recompute.md:def loss_fn(idx, targets):"
SAVING_CHECKPOINT = 'docs/guide/saving.md:fg.save({"model": model.state_dict(), "opt": opt.state_dict('
SAVING_TORCH = "docs/guide/saving.md:model.load_state_dict(torch_model.state_dict())          # t"
SAVING_DEPLOY = 'docs/guide/saving.md:fg.jit.save(model, "out/model", input_spec=[fg.jit.InputSpec'
ONNX_IN_OUT = "docs/onnx.md:scope = fg.Scope()"
ONNX_CALLS = 'docs/onnx.md:export(model, (x,), "model.onnx", input_names=["input"], out'
DIST_STATIC = "docs/distributed.md:dist.init_parallel_env()      # a world of one without a lau"
DIST_EAGER = "docs/distributed.md:model = fg.DataParallel(MyLayer())      # checks the ranks h"
DIST_SHARDED_STATIC = "docs/distributed.md:opt = dist.DistributedOptimizer(fg.optimizer.Adam(1e-3), sha"
DIST_SHARDED_EAGER = "docs/distributed.md:model = fg.DataParallel(net)"
DIST_SPLIT = "docs/distributed.md:opt = dist.DistributedOptimizer(fg.optimizer.SGD(0.01), spli"

PRELUDES = {
    NAMES_FIRST_LINES: _TORCH_NET,
    RECOMPUTE_CHECKPOINTS: _STATIC_MLP,
    RECOMPUTE_POLICY: _STATIC_MLP + "loss = build_model()\n",
    RECOMPUTE_TRACED: _GPT,
    SAVING_CHECKPOINT: _EAGER_TRAINED,
    SAVING_TORCH: _TORCH_TWIN,
    SAVING_DEPLOY: _DEPLOY,
    ONNX_IN_OUT: _ONNX_FILES,
    ONNX_CALLS: _ONNX_FILES + "from fluidgrad.onnx import export\nx = example_tensor\n",
    DIST_STATIC: _STATIC_DIST,
    DIST_EAGER: _EAGER_DIST,
    DIST_SHARDED_STATIC: _STATIC_DIST + "import fluidgrad.distributed as dist\n" + _STATIC_DIST_BUILD,
    DIST_SHARDED_EAGER: _EAGER_DIST,
    DIST_SPLIT: "import fluidgrad as fg\nimport fluidgrad.distributed as dist\n",
}

# A line the page leaves as "..." (or leaves out: the forward pass before `loss.backward()`),
# replaced by what it says, by block key.
FILL_INS = {
    DIST_STATIC: {
        "# ... build the model and its loss under fg.program_guard(main, startup), as on one process ...":
            _STATIC_DIST_BUILD.strip("\n")},
    DIST_SHARDED_EAGER: {
        "loss.backward()    # no communication":
            "loss = loss_fn(model(x_shard), y_shard)\nloss.backward()    # no communication"},
}


def runnable(key: str, source: str) -> str:
    for old, new in FILL_INS.get(key, {}).items():
        assert old in source, f"{key}: the fill-in's line is gone from the page: {old!r}"
        source = source.replace(old, new)
    return source
