"""Columns named by a parameter (``feature_groups``, ``categorical_features``): by index or name."""


def column_position(column, names, n_features, parameter):
    """The position in 0..n_features-1 of ``column``, an index (negative ones count
    from the end) or a name looked up in ``names`` (None: X has no column names).
    Raises a ValueError that names ``parameter`` for an unknown name or index."""
    if isinstance(column, str):
        if names is None or column not in names:
            where = "among X's columns" if names is not None else (
                "because X has no column names (pass a DataFrame, or indices)")
            raise ValueError(f"{parameter} names the column {column!r}, which is not {where}.")
        return list(names).index(column)
    j = int(column)
    if not -n_features <= j < n_features:
        raise ValueError(
            f"{parameter} has the column index {j}, but X has {n_features} columns."
        )
    return j % n_features
