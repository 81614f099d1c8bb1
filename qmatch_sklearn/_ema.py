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
    we. ``decay=0`` makes the teacher a copy of the student. One foreach update
    for all the parameters (as timm's ``ModelEmaV3``): a step launches one
    kernel for the teacher, not one per tensor.
    """
    teacher, student = list(teacher_params), list(student_params)
    if len(teacher) != len(student):
        raise ValueError(f"{len(teacher)} teacher parameters for {len(student)} student ones.")
    torch._foreach_lerp_(teacher, student, 1.0 - decay)
