//! Rank-normalised split R-hat, bulk/tail ESS, MCSE, quantiles, E-BFMI and CmdStan-style warnings.
