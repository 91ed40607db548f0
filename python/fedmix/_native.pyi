"""Type stubs of the native module `fedmix._native` (Rust, PyO3). Use the `fedmix` package
instead: it wraps these in documented classes."""

from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt

class FedmixError(ValueError):
    """A typed error of the library; the message is the CLI's, `kind` the error variant."""

    kind: str

class InternalError(RuntimeError):
    """The library panicked (a bug); the panic was caught before reaching Python."""

class NativeFederation:
    @property
    def data_dir(self) -> Optional[str]: ...
    def features(self, test: bool) -> Optional[npt.NDArray[np.float64]]: ...
    def responses(self, test: bool) -> Optional[npt.NDArray[np.float64]]: ...
    def client_sizes(self, test: bool) -> Optional[npt.NDArray[np.int64]]: ...
    def labels(self) -> Optional[npt.NDArray[np.int64]]: ...
    def theta_star(self) -> Optional[npt.NDArray[np.float64]]: ...
    def manifest_json(self) -> str: ...

def generate(setting: str, seed: int, sets: List[Tuple[str, str]]) -> NativeFederation: ...
def load(path: str) -> NativeFederation: ...
def algorithms() -> List[str]: ...
def keys(algorithm: str) -> List[Tuple[str, str]]: ...
def settings() -> List[Tuple[str, str, str]]: ...
def parameters() -> List[Tuple[str, str]]: ...
def key_docs() -> List[Tuple[str, str]]: ...
def run(
    algorithm: str,
    federation: NativeFederation,
    seed: int,
    init: Optional[npt.NDArray[np.float64]],
    save_iterates: bool,
    sets: List[Tuple[str, str]],
) -> Dict[str, Any]: ...
# `labels`: int64, or float64 whose entries must all be integers (checked here, as a float64
# `labels.npy` is by `fedmix validate`); the `fedmix` package refuses every other dtype first.
def validate(
    algorithm: str,
    federation: NativeFederation,
    iterates: npt.NDArray[np.float64],
    labels: Optional[Union[npt.NDArray[np.int64], npt.NDArray[np.float64]]],
    seed: int,
    init: Optional[npt.NDArray[np.float64]],
    rtol: float,
    atol: float,
    sets: List[Tuple[str, str]],
    mode: str,
) -> Dict[str, Any]: ...
