import numpy as np
from pyspark.sql.functions import udf


@udf("double")
def log_ratio(current: float, previous: float) -> float:
    if current is None or previous is None:
        return None
    return float(np.log1p(current) - np.log1p(previous))
