"""fluidgrad.io: model files and data loading.

- model_files.py: save / load of programs (versioned JSON) and parameters (safetensors), inference
  models, atomic writes; `fluidgrad.static.save` and friends are these.
- dataset.py, combine.py, sampler.py, dataloader.py: Dataset, TensorDataset, ConcatDataset,
  BatchSampler, WeightedRandomSampler, DataLoader, ...
  (paddle.io's names; torch.utils.data's meaning), get_worker_info.
"""
from .dataloader import DataLoader, WorkerInfo, default_collate_fn, get_worker_info
from .combine import ChainDataset, ComposeDataset, ConcatDataset
from .dataset import Dataset, IterableDataset, Subset, TensorDataset, random_split
from .model_files import (FILE_FORMAT_VERSION, MODEL_SUFFIX, PARAMS_SUFFIX, ModelFileError, atomic_write, c_ordered, load,
                          load_inference_model, load_safetensors, prune, read_model, save, save_inference_model)
from .sampler import (BatchSampler, DistributedBatchSampler, RandomSampler, Sampler, SequenceSampler,
                      SubsetRandomSampler, WeightedRandomSampler)

__all__ = ["FILE_FORMAT_VERSION", "MODEL_SUFFIX", "PARAMS_SUFFIX", "ModelFileError", "load", "load_inference_model", "read_model",
           "save", "save_inference_model", "DataLoader", "default_collate_fn", "Dataset", "IterableDataset",
           "Subset", "TensorDataset", "random_split", "BatchSampler", "DistributedBatchSampler", "RandomSampler",
           "Sampler", "SequenceSampler", "WorkerInfo", "get_worker_info", "ChainDataset", "ComposeDataset",
           "ConcatDataset", "SubsetRandomSampler", "WeightedRandomSampler"]
