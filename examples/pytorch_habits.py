"""A PyTorch user's training script, written with PyTorch's habits on fluidgrad.

    python examples/pytorch_habits.py [OUT_DIR]

Parameters first and `lr=` for the optimizer, `zero_grad()`, `loss.backward()`, `step()`,
`requires_grad`, `.item()`, `model.state_dict()` saved with `fluidgrad.save` and read back with
`load_state_dict`: the names differ from PyTorch's only where the import does.
"""
import sys
import tempfile
from pathlib import Path

import numpy as np

import fluidgrad as fg
import fluidgrad.nn.functional as F
from fluidgrad import nn

rng = np.random.default_rng(0)
x = fg.to_tensor(rng.standard_normal((256, 10)).astype("float32"))
y = fg.to_tensor((x.numpy()[:, :3].sum(axis=1) > 0).astype("int64"))   # a learnable rule, labels [N]

model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))
optimizer = fg.optimizer.Adam(model.parameters(), lr=1e-2)
for epoch in range(30):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
print(f"final loss {loss.item():.4f}")
assert all(p.requires_grad for p in model.parameters())

out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="fluidgrad-habits-"))
fg.save(model.state_dict(), out_dir / "model.safetensors")
restored = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))
restored.load_state_dict(fg.load(out_dir / "model.safetensors"))
accuracy = (restored(x).numpy().argmax(axis=1) == y.numpy()).mean()
print(f"restored model accuracy {accuracy:.3f}; saved in {out_dir}")
