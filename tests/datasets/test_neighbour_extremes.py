"""Neighbouring tables (one record added) with in-range extreme values: the encoding neither raises
nor warns on one of them only, so a declared range never turns one record into a refusal."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpopt.datasets.preprocess import learn_schema


def _encode(values, bounds, missing="impute"):
    labels = np.array(["a", "b"] * (len(values) // 2) + ["a"] * (len(values) % 2))
    cols = {"x": np.array(values), "label": labels}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        schema, kept = learn_schema(cols, "label", numeric_bounds={"x": bounds}, missing=missing, norm_bound=None,
                                    infer=False)
        return schema.encode({"x": cols["x"][kept]}).X[:, 0]


@pytest.mark.parametrize("added", ["1e308", "-1e308", "1.7e308", "?"])
def test_a_range_spanning_beyond_the_float_range_encodes_every_record(added):
    # hi - lo = inf: (1e308 - lo)/(hi - lo) was inf/inf = NaN with a RuntimeWarning, on this neighbour only
    base = ["0", "1", "-5e307"]
    without, with_record = _encode(base, (-1e308, 1e308)), _encode([*base, added], (-1e308, 1e308))
    np.testing.assert_array_equal(with_record[:3], without)
    np.testing.assert_allclose(without, [0.5, 0.5, 0.25])
    assert 0.0 <= with_record[3] <= 1.0


def test_the_imputed_middle_of_a_range_near_the_float_maximum_is_finite():
    # (lo + hi)/2 overflowed to inf, so a missing value was refused as "non-finite" on that neighbour only
    base = ["1.1e308", "1.2e308"]
    np.testing.assert_allclose(_encode(base, (1e308, 1.5e308)), [0.2, 0.4])
    np.testing.assert_allclose(_encode([*base, "?"], (1e308, 1.5e308)), [0.2, 0.4, 0.5])


def test_load_csv_warns_alike_on_neighbours_what_it_reads_from_the_records(tmp_path):
    # One added record with a new city adds a feature ("city=Lyon"): the layout is read from the data,
    # which DESIGN.md invariant 7 asks to be warned (it was only recorded, in the schema), and the
    # warning must be the same on both neighbours (its presence and text depend on the arguments only).
    from dpopt.datasets import load_csv
    from dpopt.estimators import PrivacyLeakWarning  # the one class, defined in dpopt.datasets

    base = "age,city,label\n30,Paris,yes\n40,Rome,no\n50,,no\n"
    loaded, messages = [], []
    for name, text in (("d.csv", base), ("d2.csv", base + "90,Lyon,yes\n")):
        (tmp_path / name).write_text(text)
        with pytest.warns(PrivacyLeakWarning) as caught:
            loaded.append(load_csv(tmp_path / name, "label"))
        messages.append([str(w.message) for w in caught])
    assert loaded[1].d == loaded[0].d + 1 and messages[0] == messages[1] and len(messages[0]) == 1
    message = messages[0][0]
    assert "the label values" in message and "of age, city" in message and "missing='drop'" in message
    assert message.split(": ", 1)[1] in loaded[0].notes
    with pytest.warns(PrivacyLeakWarning) as caught:
        declared = load_csv(tmp_path / "d2.csv", "label", numeric_bounds={"age": (0, 100)},
                            categories={"city": ["Paris", "Rome"]}, missing="impute")
    assert "age" not in str(caught[0].message) and "rows are kept" not in str(caught[0].message)
    assert declared.d == 3 and declared.n == 4


def test_the_schema_scaling_reports_no_count_of_rows_it_rounded_back(tmp_path):
    # With 23 declared one-hot columns every row has norm sqrt(23)/sqrt(23), which rounds above 1: the
    # projection moved every row and its count, Dataset.rows_changed and the notes, was n (private under
    # add/remove): 6 and 7 here, for a fully declared encoding with missing="impute".
    from dpopt.datasets import load_csv

    k = 23
    header = ",".join(f"c{j}" for j in range(k)) + ",label\n"
    rows = [",".join("a" if (i + j) % 2 else "b" for j in range(k)) + (",yes\n" if i % 2 else ",no\n")
            for i in range(6)]
    categories = {f"c{j}": ["a", "b"] for j in range(k)}
    loaded = []
    for name, body in (("d.csv", rows), ("d2.csv", [*rows, rows[0]])):
        (tmp_path / name).write_text(header + "".join(body))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # load_csv's warning about the label values
            loaded.append(load_csv(tmp_path / name, "label", categories=categories, missing="impute"))
    assert [ds.rows_changed for ds in loaded] == [0, 0] and loaded[0].notes == loaded[1].notes
    assert all(np.all(np.linalg.norm(ds.X, axis=1) <= 1.0) for ds in loaded)


def test_load_csv_advises_only_declarations_that_take_a_read_away(tmp_path):
    # A fully declared load (every column, missing='impute') still reads the label values, which load_csv
    # cannot declare: its warning told to declare every column and use missing='impute', already done.
    from dpopt.datasets import PrivacyLeakWarning, load_csv

    (tmp_path / "d.csv").write_text("age,city,label\n30,Paris,yes\n40,Rome,no\n50,,no\n")
    with pytest.warns(PrivacyLeakWarning) as caught:
        load_csv(tmp_path / "d.csv", "label", numeric_bounds={"age": (0, 100)},
                 categories={"city": ["Paris", "Rome"]}, missing="impute")
    message = str(caught[0].message)
    assert "the label values" in message
    assert "declare numeric_bounds" not in message and "missing='impute'" not in message
    with pytest.warns(PrivacyLeakWarning) as caught:
        load_csv(tmp_path / "d.csv", "label", numeric_bounds={"age": (0, 100)}, categories={"city": ["Paris", "Rome"]})
    message = str(caught[0].message)
    assert "declare numeric_bounds" not in message and "use missing='impute'" in message
    with pytest.warns(PrivacyLeakWarning) as caught:
        load_csv(tmp_path / "d.csv", "label", missing="impute")
    assert "declare numeric_bounds= and categories= for every column" in str(caught[0].message)


def test_a_data_derived_range_beyond_the_float_range_encodes_both_neighbours():
    # learn_schema refused a column whose min and max were more than the largest float apart, naming both
    # ("spans more than the largest float (-1.7e+308 to 1.7e+308)"), on the neighbour holding the second
    # extreme only; the encoding in halves (4652b01) handles that span, as for a declared range
    values = ["0.5", "-1.7e308", "0.2", "1.7e308"]
    labels = np.array(["a", "b", "a", "b"])
    encoded = []
    for n in (3, 4):
        cols = {"x": np.array(values[:n]), "label": labels[:n]}
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            schema, kept = learn_schema(cols, "label", numeric=["x"], missing="impute", norm_bound=None)
            encoded.append(schema.encode({"x": cols["x"][kept]}).X[:, 0])
    np.testing.assert_allclose(encoded[0], [1.0, 0.0, 1.0])
    np.testing.assert_allclose(encoded[1], [0.5, 0.0, 0.5, 1.0])
