"""Make sentence encoders better for your data: training objectives, augmentations, loops, and the
post-processing transforms (whitening, flow, SN, NATSV) fitted on a corpus and saved as model modules."""
