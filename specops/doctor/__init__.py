"""`specops doctor`: pure checks over one probe's facts, each with a verdict, evidence and a fix."""
