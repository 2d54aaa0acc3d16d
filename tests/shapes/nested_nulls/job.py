from pyspark.sql import functions as F


@F.udf("bigint")
def missing_readings(readings):
    """Sensor slots that reported nothing; a NaN reading is a reading (the sensor's own error value)."""
    if readings is None:
        return None
    return sum(1 for reading in readings if reading is None)
