"""`hazel.Model`: a Stan program with its data, answering BridgeStan's `StanModel` calls."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np

from . import _data, _hazel
from ._hazel import Rng

FloatArray = np.ndarray

__all__ = ["Model", "Rng"]


def _points(theta: Any, width: int, what: str) -> tuple[np.ndarray, bool]:
    """`theta` as a C-contiguous float64 array of rows of `width`, and whether it was one
    point (1-D) rather than a batch (2-D, one point per row)."""
    array = np.ascontiguousarray(theta, dtype=np.float64)
    if array.ndim == 1:
        if array.shape[0] != width:
            raise ValueError(f"{what} has {array.shape[0]} values, expected {width}")
        return array, True
    if array.ndim == 2:
        if array.shape[1] != width:
            raise ValueError(
                f"{what} has rows of {array.shape[1]} values, expected {width}"
            )
        return array, False
    raise ValueError(f"{what} must be 1-D (one point) or 2-D (one point per row)")


def _into(out: Optional[np.ndarray], values: np.ndarray, what: str) -> np.ndarray:
    """`values`, written into `out` when given (BridgeStan's `out=`: same shape required)."""
    if out is None:
        return values
    if not isinstance(out, np.ndarray) or out.shape != values.shape:
        shape = getattr(out, "shape", None)
        raise ValueError(f"{what} must have shape {values.shape}, not {shape}")
    out[...] = values
    return out


class Model:
    """A Stan program built with its data: the log density of its unconstrained parameters
    with gradient and Hessian, the constraining transforms, and NUTS sampling.

    The methods are BridgeStan's ``StanModel`` methods, with the same names, arguments,
    defaults and array shapes, so code written against BridgeStan (nutpie, BlackJAX examples,
    hand-written samplers) runs on a hazel model unchanged. One addition: every method that
    takes a point also takes a 2-D array of points (one per row) and returns one result per
    row, evaluated together (the same numbers as a loop over the rows).

    :param stan_file: Path of the ``.stan`` file (or give the program text as ``code=``).
    :param data: The data: a mapping of variable names to values (numpy arrays welcome), JSON
        text in CmdStan's format, or the path of a JSON file. ``None`` for a program without
        data.
    :param seed: Seed of the ``_rng`` calls in ``transformed data`` (as ``hazel log-density
        --seed``; ``sample`` uses its own seed, as ``hazel sample`` does).
    :param code: The Stan program as text, instead of ``stan_file``.
    :param name: The model's name (default: the file's stem, or ``model`` for ``code``).
    :param include_paths: Directories searched for ``#include`` files after the including
        file's own directory.
    :param warn: Show the checker's warnings (deprecated syntax and the like) as Python
        warnings.
    :raises hazel.ModelError: The program does not parse, check or build (the message is the
        CLI's, with the line).
    :raises hazel.DataError: The data do not match the declarations (the message names the
        variable and element).
    """

    def __init__(
        self,
        stan_file: Union[str, os.PathLike, None] = None,
        data: Union[str, os.PathLike, Mapping[str, Any], None] = None,
        *,
        seed: int = 1,
        code: Optional[str] = None,
        name: Optional[str] = None,
        include_paths: Sequence[Union[str, os.PathLike]] = (),
        warn: bool = True,
    ) -> None:
        if (stan_file is None) == (code is None):
            raise ValueError("give either stan_file or code=")
        self.stan_file = None if stan_file is None else Path(stan_file)
        self.code = code
        if name is None:
            name = self.stan_file.stem if self.stan_file is not None else "model"
        self._stem = name
        self.seed = int(seed)
        self.include_paths = [Path(p) for p in include_paths]
        self._data_json, self._data_label, self.data_file = _data.read(data)
        self._warn = warn
        self._compiled = self._build(self.seed)
        (
            self._n_params,
            self._n_tp,
            self._n_gq,
        ) = self._compiled.output_columns()
        self._names = self._compiled.output_names()
        self._dim = self._compiled.dim()

    def _build(self, seed: int) -> "_hazel.CompiledStan":
        compiled, messages = _hazel.compile(
            self._stem,
            path=None if self.stan_file is None else os.fspath(self.stan_file),
            code=self.code,
            data=self._data_json,
            data_label=self._data_label,
            seed=seed,
            include_paths=[os.fspath(p) for p in self.include_paths],
        )
        if self._warn:
            for message in messages:
                warnings.warn(message, stacklevel=3)
        return compiled

    def __repr__(self) -> str:
        source = f"{os.fspath(self.stan_file)!r}" if self.stan_file else "code=…"
        data = f", data={self._data_label!r}" if self._data_label else ""
        return f"hazel.Model({source}{data}, seed={self.seed})"

    # -- What the model is --------------------------------------------------------------

    def name(self) -> str:
        """The model's name, as Stan names it: the file's stem followed by ``_model``."""
        return f"{self._stem}_model"

    def model_info(self) -> str:
        """How the model was built: hazel's version, the executor, whether its log density
        re-traces the program at every evaluation."""
        from . import __version__

        kind = (
            "dynamic (control flow reads parameters: every evaluation re-traces the program)"
            if self._compiled.is_dynamic()
            else "static graph"
        )
        return (
            f"hazel {__version__}; model {self.name()!r}; {self._dim} unconstrained "
            f"parameters; {kind}; Hessians by finite differences of gradients"
        )

    def model_version(self) -> tuple[int, int, int]:
        """hazel's version (BridgeStan returns its own here)."""
        from . import __version__

        major, minor, patch = (int(x) for x in __version__.split(".")[:3])
        return major, minor, patch

    def param_num(self, *, include_tp: bool = False, include_gq: bool = False) -> int:
        """Number of constrained values: the parameters, and the transformed parameters and/or
        generated quantities as asked."""
        return (
            self._n_params
            + (self._n_tp if include_tp else 0)
            + (self._n_gq if include_gq else 0)
        )

    def param_unc_num(self) -> int:
        """Number of unconstrained parameters."""
        return self._dim

    def param_names(
        self, *, include_tp: bool = False, include_gq: bool = False
    ) -> list[str]:
        """Indexed names of the constrained values (CmdStan's ``a.1.2``: containers
        column-major, tuples ``b:1``, complex ``z.real``/``z.imag``), the transformed
        parameters and/or generated quantities included as asked."""
        p, tp = self._n_params, self._n_tp
        names = self._names[:p]
        if include_tp:
            names += self._names[p : p + tp]
        if include_gq:
            names += self._names[p + tp :]
        return names

    def param_unc_names(self) -> list[str]:
        """Indexed names of the unconstrained coordinates, as Stan names them (``b.3``;
        a simplex of K has K − 1, a covariance matrix's are numbered flat)."""
        return self._compiled.unconstrained_names()

    # -- Constraining transforms --------------------------------------------------------

    def param_constrain(
        self,
        theta_unc: FloatArray,
        *,
        include_tp: bool = False,
        include_gq: bool = False,
        out: Optional[FloatArray] = None,
        rng: Optional[Rng] = None,
    ) -> FloatArray:
        """The constrained parameters at an unconstrained point, followed by the transformed
        parameters and/or generated quantities as asked. Generated quantities draw from
        ``rng`` (required for them; see :meth:`new_rng`), which advances.

        :raises ValueError: ``include_gq`` without ``rng``, or ``out`` of the wrong shape.
        :raises hazel.EvaluationError: The model rejected the point (a failed check in
            transformed parameters or generated quantities), with the model line.
        """
        if include_gq and rng is None:
            raise ValueError("must specify rng when including generated quantities")
        points, single = _points(theta_unc, self._dim, "theta_unc")
        n = 1 if single else points.shape[0]
        flat = self._compiled.constrain(
            points.reshape(-1), n, include_tp, include_gq, rng
        )
        width = self.param_num(include_tp=include_tp, include_gq=include_gq)
        values = flat if single else flat.reshape(n, width)
        return _into(out, values, "out")

    def param_unconstrain(
        self, theta: FloatArray, *, out: Optional[FloatArray] = None
    ) -> FloatArray:
        """The unconstrained point of constrained parameter values (in the order of
        :meth:`param_names`).

        :raises hazel.DataError: A value is outside its parameter's support (named).
        """
        points, single = _points(theta, self._n_params, "theta")
        n = 1 if single else points.shape[0]
        flat = self._compiled.unconstrain(points.reshape(-1), n)
        values = flat if single else flat.reshape(n, self._dim)
        return _into(out, values, "out")

    def param_unconstrain_json(
        self,
        theta_json: Union[str, Mapping[str, Any]],
        *,
        out: Optional[FloatArray] = None,
    ) -> FloatArray:
        """The unconstrained point of constrained parameter values given as CmdStan JSON text
        or a mapping of names to values. Every parameter must be given.

        :raises hazel.DataError: A parameter is missing, misspelt, of the wrong size or outside
            its support (named).
        """
        if not isinstance(theta_json, str):
            theta_json = _data.dumps(theta_json)
        values = self._compiled.unconstrain_json(theta_json)
        return _into(out, values, "out")

    def param_initialize(
        self,
        rng: Rng,
        theta_json: Union[str, Mapping[str, Any], None] = None,
        *,
        init_radius: float = 2.0,
        max_tries: int = 100,
        jacobian: bool = True,
        out: Optional[FloatArray] = None,
    ) -> FloatArray:
        """A starting point: the parameters ``theta_json`` gives (constrained values, CmdStan
        JSON text or a mapping), the others uniform in ``(-init_radius, init_radius)`` on the
        unconstrained scale drawn from ``rng``; retried up to ``max_tries`` times until the log
        density (with the Jacobian when ``jacobian``) and its gradient are finite.

        :raises hazel.EvaluationError: No finite point in ``max_tries`` tries.
        """
        if theta_json is not None and not isinstance(theta_json, str):
            theta_json = _data.dumps(theta_json)
        values = self._compiled.initialize(
            rng, theta_json, float(init_radius), int(max_tries), bool(jacobian)
        )
        return _into(out, values, "out")

    def new_rng(self, seed: int) -> Rng:
        """A random stream for the generated quantities of :meth:`param_constrain`."""
        return Rng(int(seed))

    # -- Sampling -----------------------------------------------------------------------

    def sample(
        self,
        *,
        chains: int = 4,
        warmup: int = 1000,
        draws: int = 1000,
        seed: Optional[int] = None,
        threads: int = 0,
        adapt_delta: float = 0.8,
        max_depth: int = 10,
        thin: int = 1,
        metric: Optional[str] = None,
        adaptation: Optional[str] = None,
        init: Union[float, str, None] = None,
        inits: Any = None,
        save_warmup: bool = False,
        algorithm: str = "nuts",
        progress: Union[bool, str] = True,
        observed_data: Any = None,
        constant_data: Any = None,
        coords: Optional[Mapping[str, Any]] = None,
        dims: Optional[Mapping[str, Sequence[str]]] = None,
    ):
        """NUTS draws as ArviZ ``InferenceData``: what ``hazel sample`` draws with the same
        seed and settings, bit for bit (the same code runs both).

        :param chains: Number of chains (ids 1, 2, …).
        :param warmup: Warmup (adaptation) iterations per chain.
        :param draws: Draws per chain after warmup.
        :param seed: The run's seed, 0 to 4294967295 (``None``: one drawn at random, stored
            in ``idata.attrs["seed"]``). Transformed data draw from it too, as in CmdStan.
        :param threads: Worker threads running chains (0: one per core); never changes the
            draws.
        :param adapt_delta: Target acceptance statistic of step-size adaptation.
        :param max_depth: Maximum tree depth.
        :param thin: Keep every ``thin``-th iteration.
        :param metric: ``"diag"`` or ``"dense"`` mass matrix, learnt by Stan's windowed
            adaptation unless ``adaptation`` says otherwise (``None``: the default
            adaptation's own metric).
        :param adaptation: How warmup learns the metric: ``"stan"`` (Stan's windowed
            scheme), ``"diag-grad"`` or ``"low-rank"`` (nutpie's, from draws and gradients).
            ``None``: ``"low-rank"`` (the default of ``hazel sample``, median 9.1× Stan's
            ESS per gradient on posteriordb tiers 1–3 with Pathfinder inits), or ``"stan"``
            when ``metric`` is given or nothing is adapted.
        :param init: Where chains start without ``inits``: ``"pathfinder"`` (a draw of a
            multi-path Pathfinder run per chain; where Pathfinder finds none, a warning and the
            radius 2), or a radius R (uniformly in ``(-R, R)`` on the unconstrained scale,
            Stan's default 2). ``None``: ``"pathfinder"``, or 2 for fixed_param.
        :param inits: Initial values (constrained): a mapping, JSON text or a JSON file for
            every chain, or a list of those, one per chain; parameters left out start
            uniformly in ``(-2, 2)`` on the unconstrained scale, from each chain's own
            stream.
        :param save_warmup: Keep the warmup draws (``warmup_posterior``,
            ``warmup_sample_stats``).
        :param algorithm: ``"nuts"`` or ``"fixed_param"`` (a model without parameters always
            runs fixed_param).
        :param progress: Show progress (``True``: in Jupyter, else on the terminal, else
            10% lines on stderr), or one of ``"notebook"``, ``"terminal"``, ``"lines"``;
            ``False`` for none.
        :param observed_data: Data variables (names, or a mapping of names to values) for
            the ``observed_data`` group.
        :param constant_data: The same for ``constant_data``.
        :param coords: Coordinates for ArviZ (as ``arviz.from_dict``).
        :param dims: Dimension names per variable (as ``arviz.from_dict``).

        The GIL is released while the chains run. Ctrl-C (KeyboardInterrupt) stops every
        chain before its next iteration and returns what was drawn, with a warning.
        """
        from . import _inference, _progress

        if seed is None:
            import secrets

            seed = secrets.randbelow(2**31)
        seed = int(seed)
        if not 0 <= seed < 2**32:
            raise ValueError("seed must be an integer from 0 to 4294967295")
        compiled = self._compiled
        if seed != self.seed and compiled.transformed_data_is_random():
            # Transformed data draw from the run's seed, as `hazel sample --seed` does.
            compiled = self._build(seed)
        if inits is None:
            init_values = None
        elif isinstance(inits, (list, tuple)):
            if len(inits) != chains:
                raise ValueError(f"inits has {len(inits)} entries for {chains} chains")
            init_values = [_data.read(v)[0] for v in inits]
        else:
            init_values = [_data.read(inits)[0]]
        run = compiled.sample(
            chains=int(chains),
            warmup=int(warmup),
            draws=int(draws),
            seed=seed,
            threads=int(threads),
            adapt_delta=float(adapt_delta),
            max_depth=int(max_depth),
            thin=int(thin),
            metric=None if metric is None else str(metric),
            adaptation=None if adaptation is None else str(adaptation),
            init=None if init is None else str(init),
            inits=init_values,
            save_warmup=bool(save_warmup),
            algorithm=str(algorithm),
        )
        mode = "auto" if progress is True else ("off" if progress is False else progress)
        shown = _progress.Progress(
            run.chain_ids(), run.warmup(), run.draws(), mode=mode
        )
        interrupted = False
        try:
            while not run.wait(0.2):
                shown.update(run.states())
                for message in run.messages():
                    shown.message(message)
        except KeyboardInterrupt:
            interrupted = True
            run.interrupt()
            while not run.wait(0.2):
                pass
        outcome = run.result()
        shown.close(run.states())
        for note in outcome["notes"]:
            warnings.warn(note, stacklevel=2)
        for failure in outcome["failures"]:
            warnings.warn(failure, stacklevel=2)
        if interrupted:
            counts = [c["sampling_stats"].shape[1] for c in outcome["chains"]]
            if not any(counts):
                raise KeyboardInterrupt("sampling interrupted before the first draw")
            warnings.warn(
                f"sampling interrupted: returning the draws made so far ({counts} per chain)",
                stacklevel=2,
            )
        data = self._data_values() if (observed_data or constant_data) else {}
        return _inference.to_inference_data(
            outcome["chains"],
            data=data,
            observed_data=observed_data,
            constant_data=constant_data,
            coords=coords,
            dims=dims,
            attrs={"seed": seed, "num_warmup": outcome["num_warmup"],
                   "num_samples": outcome["num_samples"], "thin": int(thin),
                   "max_depth": int(max_depth), "adapt_delta": float(adapt_delta),
                   "metric": str(metric), "algorithm": outcome["algorithm"],
                   "interrupted": int(interrupted)},
        )

    def _data_values(self) -> dict:
        """The model's data as Python values (for `observed_data`/`constant_data`)."""
        import json

        return json.loads(self._data_json) if self._data_json else {}

    # -- Log density and derivatives ----------------------------------------------------

    def log_density(
        self,
        theta_unc: FloatArray,
        *,
        propto: bool = True,
        jacobian: bool = True,
    ) -> Union[float, FloatArray]:
        """The log density at an unconstrained point: without the constant terms of ``~``
        statements when ``propto`` (``target +=`` keeps its terms), with the log-Jacobians of
        the constraining transforms when ``jacobian``. The defaults are the sampler's density
        (CmdStan's ``lp__``).

        :raises hazel.EvaluationError: The density cannot be evaluated there (a ``reject``, an
            argument outside a distribution's support), with the model line.
        """
        lps, _ = self._evaluate(theta_unc, propto, jacobian)
        return lps

    def log_density_gradient(
        self,
        theta_unc: FloatArray,
        *,
        propto: bool = True,
        jacobian: bool = True,
        out: Optional[FloatArray] = None,
    ) -> tuple[Union[float, FloatArray], FloatArray]:
        """The log density (see :meth:`log_density`) and its gradient."""
        lps, grads = self._evaluate(theta_unc, propto, jacobian)
        return lps, _into(out, grads, "out")

    def _evaluate(self, theta_unc, propto, jacobian):
        points, single = _points(theta_unc, self._dim, "theta_unc")
        n = 1 if single else points.shape[0]
        lps, grads = self._compiled.log_density_gradient(
            points.reshape(-1), n, bool(propto), bool(jacobian)
        )
        if single:
            return float(lps[0]), grads
        return lps, grads.reshape(n, self._dim)

    def log_density_hessian(
        self,
        theta_unc: FloatArray,
        *,
        propto: bool = True,
        jacobian: bool = True,
        out_grad: Optional[FloatArray] = None,
        out_hess: Optional[FloatArray] = None,
    ) -> tuple[Union[float, FloatArray], FloatArray, FloatArray]:
        """The log density, its gradient and its Hessian. The Hessian is BridgeStan's default:
        central finite differences of the (exact) gradient with Stan Math's step sizes
        (``finite_diff_hessian_auto``), symmetric; about 1e-8 relative accuracy."""
        points, single = _points(theta_unc, self._dim, "theta_unc")
        d = self._dim
        rows = [points] if single else list(points)
        results = [
            self._compiled.log_density_hessian(row, bool(propto), bool(jacobian))
            for row in rows
        ]
        if single:
            lp, grad, hess = results[0]
            hess = hess.reshape(d, d)
        else:
            lp = np.array([r[0] for r in results])
            grad = np.stack([r[1] for r in results]) if results else np.zeros((0, d))
            hess = (
                np.stack([r[2].reshape(d, d) for r in results])
                if results
                else np.zeros((0, d, d))
            )
        return lp, _into(out_grad, grad, "out_grad"), _into(out_hess, hess, "out_hess")

    def log_density_hessian_vector_product(
        self,
        theta_unc: FloatArray,
        v: FloatArray,
        *,
        propto: bool = True,
        jacobian: bool = True,
        out: Optional[FloatArray] = None,
    ) -> tuple[Union[float, FloatArray], FloatArray]:
        """The log density and the product of its Hessian with ``v``, by central differences
        of gradients along ``v`` (BridgeStan's default, Stan Math's
        ``finite_diff_hessian_times_vector_auto``)."""
        points, single = _points(theta_unc, self._dim, "theta_unc")
        vs, v_single = _points(v, self._dim, "v")
        if single:
            if not v_single:
                raise ValueError("v must be 1-D for a single point")
            lp, hv = self._compiled.log_density_hessian_vector_product(
                points, vs, bool(propto), bool(jacobian)
            )
            return lp, _into(out, hv, "out")
        if v_single:
            vs = np.broadcast_to(vs, points.shape)
        elif vs.shape != points.shape:
            raise ValueError("v must be one vector or one row per point")
        results = [
            self._compiled.log_density_hessian_vector_product(
                np.ascontiguousarray(p), np.ascontiguousarray(w), bool(propto), bool(jacobian)
            )
            for p, w in zip(points, vs)
        ]
        lp = np.array([r[0] for r in results])
        hv = (
            np.stack([r[1] for r in results])
            if results
            else np.zeros((0, self._dim))
        )
        return lp, _into(out, hv, "out")
