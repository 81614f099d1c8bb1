"""Exponential moving average of weights: the momentum teacher."""

import copy

import torch


def make_teacher(student):
    """A copy of ``student`` that never receives gradients."""
    teacher = copy.deepcopy(student)
    teacher.requires_grad_(False)
    return teacher


@torch.no_grad()
def ema_update_(teacher_params, student_params, decay):
    """theta_teacher <- decay * theta_teacher + (1 - decay) * theta_student.

    Takes two iterables of matching parameters. The reference covers every
    parameter of the student but not the batch-norm running statistics; so do
    we. ``decay=0`` makes the teacher a copy of the student.
    """
    for theta_teacher, theta_student in zip(teacher_params, student_params, strict=True):
        theta_teacher.lerp_(theta_student, 1.0 - decay)
