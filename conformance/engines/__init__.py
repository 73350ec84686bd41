"""The engines, each a front end over the lockstep core: explore, prove, cover, fuzz campaigns, gate, soak."""
