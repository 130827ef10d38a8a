"""Bad programs, data and points raise Python exceptions carrying the CLI's message: the
data variable and element, the model line."""

import numpy as np
import pytest

import hazel
from conftest import REPO

EIGHT = REPO / "examples" / "eight_schools"


def eight_schools_data():
    return {
        "J": 8,
        "y": [28, 8, -3, 7, -1, 1, 18, 12],
        "sigma": [15, 10, 16, 11, 9, 11, 10, 18],
    }


def test_bad_data_names_the_variable_and_element():
    data = eight_schools_data()
    data["sigma"][2] = -16
    with pytest.raises(hazel.DataError) as error:
        hazel.Model(EIGHT / "model.stan", data=data)
    message = str(error.value)
    assert "sigma[3]" in message and "-16" in message
    assert "model.stan" in message  # the declaration's place
    assert isinstance(error.value, RuntimeError)  # as BridgeStan's errors


def test_missing_and_misshapen_data():
    data = eight_schools_data()
    del data["y"]
    with pytest.raises(hazel.DataError, match="`y`"):
        hazel.Model(EIGHT / "model.stan", data=data)
    data = eight_schools_data()
    data["y"] = data["y"][:5]
    with pytest.raises(hazel.DataError, match="y"):
        hazel.Model(EIGHT / "model.stan", data=data)
    with pytest.raises(hazel.DataError, match="data file"):
        hazel.Model(EIGHT / "model.stan", data=str(REPO / "examples/bernoulli/data.json"))


def test_data_as_json_text_and_path_and_numpy():
    path = EIGHT / "data.json"
    a = hazel.Model(EIGHT / "model.stan", data=path)
    b = hazel.Model(EIGHT / "model.stan", data=path.read_text())
    data = eight_schools_data()
    data["y"] = np.array(data["y"], dtype=np.int64)
    data["sigma"] = np.array(data["sigma"], dtype=float)
    data["J"] = np.int32(8)
    c = hazel.Model(EIGHT / "model.stan", data=data)
    q = np.linspace(-1, 1, 10)
    assert a.log_density(q) == b.log_density(q) == c.log_density(q)


def test_program_errors_name_the_line():
    with pytest.raises(hazel.ModelError) as error:
        hazel.Model(code="parameters { real x; }\nmodel { x ~ normal(0, undefined_thing); }")
    assert "undefined_thing" in str(error.value) and "2" in str(error.value)
    with pytest.raises(FileNotFoundError):
        hazel.Model(EIGHT / "model.stan", data=EIGHT / "no_such_file.json")
    with pytest.raises(hazel.ModelError, match="cannot read"):
        hazel.Model(EIGHT / "no_such_model.stan")


def test_evaluation_errors_name_the_model_line():
    code = "parameters { real x; }\nmodel {\n  reject(\"bad x \", x);\n}"
    model = hazel.Model(code=code)
    with pytest.raises(hazel.EvaluationError, match=r"bad x.*line 3"):
        model.log_density(np.array([0.5]))


def test_bad_points_and_shapes():
    model = hazel.Model(EIGHT / "model.stan", data=EIGHT / "data.json")
    with pytest.raises(ValueError, match="10"):
        model.log_density(np.zeros(3))
    with pytest.raises(ValueError, match="out"):
        model.log_density_gradient(np.zeros(10), out=np.zeros(4))
    theta = model.param_constrain(np.zeros(10))
    theta[9] = -1.0  # tau < 0
    with pytest.raises(hazel.DataError, match="tau"):
        model.param_unconstrain(theta)
    with pytest.raises(hazel.DataError, match="`mu`"):
        model.param_unconstrain_json({"theta_trans": [0.0] * 8, "tau": 1.0})
    with pytest.raises(hazel.DataError, match="did you mean"):
        model.param_unconstrain_json({"theta_trans": [0.0] * 8, "tau": 1.0, "mu": 0, "muu": 1})


def test_checker_warnings_become_python_warnings():
    code = "parameters { real x; }\nmodel { x ~ normal(0, 1); real y = 3 / 2; }"
    with pytest.warns(UserWarning, match="[Ii]nteger division"):
        hazel.Model(code=code)
