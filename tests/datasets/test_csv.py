"""The CSV loader: the chen2020 §5.2 pipeline on a user's file, and clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from dpopt.datasets import load, load_csv, to_pm1

GOOD = """age,city,income,score,label
30,Paris,1000,0.5,yes
40,Rome,3000,?,no
50,Paris,2000,1.5,no
20,Oslo,,2.5,no
60,Rome,5000,3.5,yes
"""


def _write(tmp_path, text, name="data.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_pipeline_one_hot_minmax_rowbound_labels(tmp_path):
    ds = load_csv(_write(tmp_path, GOOD), "label")
    # rows 2 ('?') and 4 (empty) dropped and reported
    assert ds.n == 3 and ds.rows_dropped == 2 and "2 of 5 rows dropped" in ds.notes
    assert ds.feature_names == ("age", "city=Paris", "city=Rome", "income", "score")
    np.testing.assert_array_equal(ds.y, [1.0, -1.0, 1.0])
    assert ds.classes == ("no", "yes")
    raw = ds.X * np.sqrt(4)  # 3 numeric + 1 categorical group
    np.testing.assert_allclose(raw[:, 0], [0.0, 2 / 3, 1.0])  # age 30, 50, 60
    np.testing.assert_allclose(raw[:, 1:3], [[1, 0], [1, 0], [0, 1]])
    np.testing.assert_allclose(raw[:, 3], [0.0, 0.25, 1.0])  # income 1000, 2000, 5000
    assert np.all(np.linalg.norm(ds.X, axis=1) <= 1.0)
    assert set(ds.data_derived_bounds) == {"age", "income", "score"}


def test_declared_bounds_categories_and_missing_category(tmp_path):
    p = _write(tmp_path, GOOD)
    ds = load_csv(
        p,
        "label",
        numeric_bounds={"age": (0, 100), "income": (0, 10000), "score": (0, 5)},
        categories={"city": ["Paris", "Rome", "Oslo", "Berlin"]},
        missing="drop",
        norm_bound=None,
    )
    assert ds.data_derived_bounds == ()
    assert ds.feature_names[1:5] == ("city=Paris", "city=Rome", "city=Oslo", "city=Berlin")
    np.testing.assert_allclose(ds.X[:, 0], [0.3, 0.5, 0.6])
    # out-of-range values are clipped into the declared range
    clipped = load_csv(p, "label", numeric_bounds={"age": (35, 45)}, norm_bound=None)
    np.testing.assert_allclose(clipped.X[:, 0], [0.0, 1.0, 1.0])
    # missing categorical as its own category keeps rows with a missing categorical only
    text = GOOD.replace("Oslo", "?").replace("20,?,,2.5", "20,?,100,2.5")
    kept = load_csv(_write(tmp_path, text, "b.csv"), "label", missing="category")
    assert "city=?" in kept.feature_names and kept.n == 4 and kept.rows_dropped == 1


def test_positive_class_and_multiclass(tmp_path):
    text = "x,y\n1,a\n2,b\n3,c\n4,a\n"
    p = _write(tmp_path, text)
    with pytest.raises(ValueError, match="3 classes .*positive_class"):
        load_csv(p, "y")
    ds = load_csv(p, "y", positive_class="a")
    np.testing.assert_array_equal(ds.y, [1, -1, -1, 1])
    with pytest.raises(ValueError, match="positive class 'z' does not occur"):
        load_csv(p, "y", positive_class="z")
    y, classes = to_pm1(np.array([0, 1, 1, 0]))
    np.testing.assert_array_equal(y, [-1, 1, 1, -1])
    assert classes == (0, 1)


def test_errors_are_clear(tmp_path):
    with pytest.raises(FileNotFoundError, match="CSV file not found: .*missing.csv"):
        load_csv(tmp_path / "missing.csv", "label")
    p = _write(tmp_path, GOOD)
    with pytest.raises(ValueError, match="target column 'target' not found.*columns are"):
        load_csv(p, "target")
    with pytest.raises(ValueError, match="column 'city' is numeric but row 2 has the non-numeric value 'Paris'"):
        load_csv(p, "label", numeric=["city"])
    bad = _write(tmp_path, "a,b,label\n1,2,x\n3,inf,y\n", "inf.csv")
    with pytest.raises(ValueError, match="column 'b' has the non-finite value 'inf' in row 3"):
        load_csv(bad, "label")
    ragged = _write(tmp_path, "a,b,label\n1,2,x\n3,y\n", "ragged.csv")
    with pytest.raises(ValueError, match="line 3 .* has 2 fields, expected 3"):
        load_csv(ragged, "label")
    with pytest.raises(ValueError, match="empty"):
        load_csv(_write(tmp_path, "", "empty.csv"), "label")
    with pytest.raises(ValueError, match="no data rows"):
        load_csv(_write(tmp_path, "a,label\n", "hdr.csv"), "label")
    with pytest.raises(ValueError, match="missing values \\(counts per column\\)"):
        load_csv(p, "label", missing="error")
    with pytest.raises(ValueError, match="numeric_bounds names unknown column"):
        load_csv(p, "label", numeric_bounds={"height": (0, 1)})
    with pytest.raises(ValueError, match="one class only|two"):
        load_csv(_write(tmp_path, "a,label\n1,x\n2,x\n", "one.csv"), "label")
    with pytest.raises(ValueError, match="repeated"):
        load_csv(_write(tmp_path, "a,a,label\n1,2,x\n", "dup.csv"), "label")


def test_no_header_delimiter_and_registry(tmp_path):
    p = _write(tmp_path, "1;0.5;1\n2;0.7;0\n3;0.1;1\n", "semi.csv")
    ds = load_csv(p, "x2", header=False, delimiter=";")
    assert ds.feature_names == ("x0", "x1") and ds.n == 3
    via_registry = load(f"csv:{_write(tmp_path, GOOD)}", target="label")
    assert via_registry.n == 3 and via_registry.name == "csv:data.csv"


# -- the preprocessing schema: learned once, applied to new rows with the same layout ---------------


def test_schema_is_json_and_reencodes_the_training_rows(tmp_path):
    import json

    from dpopt.datasets.preprocess import DECLARED, FROM_DATA, TableSchema

    p = _write(tmp_path, GOOD)
    ds = load_csv(p, "label", numeric_bounds={"age": (0, 100)})
    schema = ds.info["schema"]
    assert schema.feature_names == ds.feature_names and schema.target == "label"
    kinds = {c.name: (c.kind, c.source) for c in schema.columns}
    assert kinds == {
        "age": ("numeric", DECLARED),
        "city": ("categorical", FROM_DATA),
        "income": ("numeric", FROM_DATA),
        "score": ("numeric", FROM_DATA),
    }
    assert schema.data_derived_bounds == ("income", "score") == ds.data_derived_bounds
    assert schema.data_derived_categories == ("city",)
    back = TableSchema.from_dict(json.loads(json.dumps(schema.to_dict())))
    assert back == schema
    again = load_csv(p, "label", schema=back.to_dict())
    np.testing.assert_array_equal(again.X, ds.X)
    np.testing.assert_array_equal(again.y, ds.y)


def test_schema_encodes_new_rows_clipped_unknown_zero_missing_imputed():
    from dpopt.datasets.preprocess import learn_schema

    train = {
        "age": np.array(["20", "40", "60"]),
        "city": np.array(["Paris", "Rome", "Paris"]),
        "label": np.array(["a", "b", "a"]),
    }
    schema, kept = learn_schema(train, "label", numeric_bounds={"age": (0, 100)}, norm_bound=None)
    np.testing.assert_array_equal(kept, [0, 1, 2])
    assert schema.feature_names == ("age", "city=Paris", "city=Rome") and schema.row_bound == pytest.approx(np.sqrt(2))
    new = {"city": np.array(["Rome", "Berlin", "Paris", "Paris"]), "age": np.array(["50", "150", "-3", "?"])}
    with pytest.raises(ValueError, match="column 'age' has a missing value in row 5"):
        schema.encode(new, row_offset=2)
    enc = schema.encode(new, impute_missing=True)
    np.testing.assert_allclose(enc.X, [[0.5, 0, 1], [1.0, 0, 0], [0.0, 1, 0], [0.5, 1, 0]])
    assert enc.rows_imputed == 1 and enc.rows_unknown == 1 and enc.rows_changed == 0
    with pytest.raises(ValueError, match="column 'age' is numeric but row 3 has the non-numeric value 'old'"):
        schema.encode({"city": np.array(["Rome", "Rome"]), "age": np.array(["1", "old"])}, row_offset=2)
    with pytest.raises(ValueError, match=r"lack the feature column\(s\) \['city'\]"):
        schema.encode({"age": np.array(["1"])})
    # with the default norm bound every encoded row lies in the unit ball, whatever the input
    unit, _ = learn_schema(train, "label", numeric_bounds={"age": (0, 100)})
    assert np.all(np.linalg.norm(unit.encode(new, impute_missing=True).X, axis=1) <= 1.0 + 1e-12)


def test_schema_missing_category_and_declarations():
    from dpopt.datasets.preprocess import ColumnSpec, TableSchema, learn_schema

    cols = {"c": np.array(["x", "?", "y"]), "n": np.array(["1", "2", "3"]), "t": np.array(["a", "b", "a"])}
    schema, kept = learn_schema(cols, "t", missing="category")
    assert schema.feature_names == ("c=?", "c=x", "c=y", "n") and kept.size == 3
    np.testing.assert_array_equal(schema.encode({"c": np.array(["NA"]), "n": np.array(["2"])}).X[0, :3] > 0, [1, 0, 0])
    declared, _ = learn_schema(cols, "t", categories={"n": ["1", "2"]}, missing="category")
    assert declared.columns[1].kind == "categorical" and declared.data_derived_categories == ("c",)
    with pytest.raises(ValueError, match="both numeric and categorical"):
        learn_schema(cols, "t", categories={"n": ["1"]}, numeric=["n"])
    with pytest.raises(ValueError, match="categories names unknown column"):
        learn_schema(cols, "t", categories={"zz": ["1"]})
    with pytest.raises(ValueError, match="not a dpopt-table-schema"):
        TableSchema.from_dict({"columns": []})
    with pytest.raises(ValueError, match="finite bounds"):
        ColumnSpec("n", "numeric", 3.0, 1.0)
    with pytest.raises(ValueError, match="either schema or the declarations"):
        from dpopt.datasets.preprocess import encode_table

        encode_table(cols, "t", numeric=["n"], schema=schema)
