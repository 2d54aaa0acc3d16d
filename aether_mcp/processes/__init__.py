"""How the server starts, confines, keeps warm and ends the processes it runs."""
