"""vx: verifiers of AI-agent outputs as inspectable, evolvable expressions."""

__version__ = "0.1.0"
