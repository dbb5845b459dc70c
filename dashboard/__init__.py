"""The placelab Streamlit app: reads runs and calls engine/policies; holds no algorithm."""
