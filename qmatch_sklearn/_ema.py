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
    """theta_teacher <- decay * theta_teacher + (1 - decay) * theta_student, over two iterables
    of matching parameters (not batch-norm statistics, as in the reference) in one foreach
    update; ``decay=0`` copies the student."""
    teacher, student = list(teacher_params), list(student_params)
    if len(teacher) != len(student):
        raise ValueError(f"{len(teacher)} teacher parameters for {len(student)} student ones.")
    torch._foreach_lerp_(teacher, student, 1.0 - decay)
