"""The Django side of EchoChat: job kinds, dataset snapshots, the checkpoint registry, pages."""
